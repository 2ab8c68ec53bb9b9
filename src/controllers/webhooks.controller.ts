import {
  Body,
  Controller,
  Delete,
  Example,
  Get,
  Path,
  Post,
  Request,
  Response,
  Route,
  SuccessResponse,
  Tags,
} from '@tsoa/runtime';
import type { Request as ExRequest } from 'express';
import { principalOf } from '../http/authenticate';
import type { Problem } from '../http/problem';
import { PROBLEM_JSON } from '../http/problem';
import type { Services } from '../services';
import type { Id } from './types';
import type { CreatedWebhookResponse, WebhookDeliveryList, WebhookList } from './responses';
import { createdWebhookExample, webhookDeliveriesExample, webhookListExample } from './examples/webhooks';
import {
  conversationNotFoundExample,
  forbiddenExample,
  unauthorizedExample,
  validationFailedExample,
} from './examples/problems';

export interface CreateWebhookBody {
  /**
   * Where deliveries are POSTed: http or https; link-local and cloud metadata
   * addresses are refused (as for participants, PARTICIPANT_ALLOWED_HOSTS aside).
   * @minLength 1
   * @maxLength 2048
   */
  url: string;
  /**
   * The event types to receive (those of GET /events), at least one; an unknown one is a 400 naming `events`.
   */
  events: string[];
  /** Only this conversation's events (one the caller owns; admins: any); absent: every conversation the caller sees. */
  conversationId?: Id;
}

@Route('webhooks')
@Tags('Events')
export class WebhooksController extends Controller {
  constructor(private readonly services: Services) {
    super();
  }

  /**
   * Creates a webhook: the events its creator may see (as on GET /events), of
   * the types named, are POSTed to `url`, signed as Standard Webhooks says
   * (`webhook-id`, `webhook-timestamp`, `webhook-signature`). The secret is in
   * this response only.
   * @summary Create a webhook (users, admins)
   * @example body {"url": "https://hooks.example.com/gateway", "events": ["approval.requested"]}
   */
  @Post()
  @Example<CreatedWebhookResponse>(createdWebhookExample)
  @SuccessResponse(201, 'Created')
  @Response<Problem>(400, 'A refused URL, or an unknown event type', validationFailedExample, PROBLEM_JSON)
  @Response<Problem>(401, 'No valid bearer token', unauthorizedExample, PROBLEM_JSON)
  @Response<Problem>(403, 'Agents have no webhooks', forbiddenExample, PROBLEM_JSON)
  @Response<Problem>(
    404,
    'No such conversation, or one the caller does not own',
    conversationNotFoundExample,
    PROBLEM_JSON,
  )
  public async createWebhook(
    @Request() req: ExRequest,
    @Body() body: CreateWebhookBody,
  ): Promise<CreatedWebhookResponse> {
    const hook = await this.services.webhooks.create(principalOf(req), body, req.id ?? '-');
    this.setStatus(201);
    return hook;
  }

  /**
   * The caller's webhooks (admins: every one), without their secrets.
   * @summary List webhooks
   */
  @Get()
  @Example<WebhookList>(webhookListExample)
  @Response<Problem>(401, 'No valid bearer token', unauthorizedExample, PROBLEM_JSON)
  @Response<Problem>(403, 'Agents have no webhooks', forbiddenExample, PROBLEM_JSON)
  public async listWebhooks(@Request() req: ExRequest): Promise<WebhookList> {
    return { webhooks: await this.services.webhooks.list(principalOf(req)) };
  }

  /**
   * Deletes a webhook: nothing more is sent to it.
   * @summary Delete a webhook
   */
  @Delete('{webhookId}')
  @SuccessResponse(204, 'Deleted')
  @Response<Problem>(401, 'No valid bearer token', unauthorizedExample, PROBLEM_JSON)
  @Response<Problem>(403, 'Agents have no webhooks', forbiddenExample, PROBLEM_JSON)
  @Response<Problem>(404, 'No such webhook among the caller’s', conversationNotFoundExample, PROBLEM_JSON)
  public async deleteWebhook(@Request() req: ExRequest, @Path() webhookId: string): Promise<void> {
    await this.services.webhooks.delete(principalOf(req), webhookId, req.id ?? '-');
    this.setStatus(204);
  }

  /**
   * The last 100 delivery attempts, newest first.
   * @summary A webhook's delivery log
   */
  @Get('{webhookId}/deliveries')
  @Example<WebhookDeliveryList>(webhookDeliveriesExample)
  @Response<Problem>(401, 'No valid bearer token', unauthorizedExample, PROBLEM_JSON)
  @Response<Problem>(403, 'Agents have no webhooks', forbiddenExample, PROBLEM_JSON)
  @Response<Problem>(404, 'No such webhook among the caller’s', conversationNotFoundExample, PROBLEM_JSON)
  public async listWebhookDeliveries(
    @Request() req: ExRequest,
    @Path() webhookId: string,
  ): Promise<WebhookDeliveryList> {
    return { deliveries: await this.services.webhooks.deliveries(principalOf(req), webhookId) };
  }
}
