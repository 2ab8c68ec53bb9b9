import { Body, Controller, Delete, Get, Path, Post, Response, Route, SuccessResponse, Tags } from '@tsoa/runtime';
import { createConversation, deleteConversation, getConversation, getConversationState } from '../core/conversations';
import { ZPolicy } from '../core/policy';
import { AppError, type Problem } from '../http/problem';
import type { Services } from '../services';
import type { Id, JsonObject, Resource } from './types';

export interface Policy {
  /** Canonical names with `*` wildcards (`data-tool/*`, `*\/delete-*`): matched actions are denied. */
  deny: string[];
}

export interface CreateConversationBody {
  /** Generated (a UUID) when absent. */
  id?: Id;
  metadata?: JsonObject;
  policy?: Policy;
}

export interface Conversation {
  id: string;
  metadata: JsonObject;
  policy: Policy;
  /** The M4 legacy level (1-3), or null. */
  legacyLevel: number | null;
  /** Epoch milliseconds. */
  createdAt: number;
  updatedAt: number;
}

/** The seed's M5 document. */
export interface ConversationState {
  /** The M4 legacy level, or null. */
  currentLevel: number | null;
  toolPermissions: { [tool: string]: { level: number; upgradedAt: number } };
  sharedContext: { resources: Resource[] };
}

@Route('conversations')
@Tags('Conversations')
export class ConversationsController extends Controller {
  constructor(private readonly services: Services) {
    super();
  }

  /** Creates a conversation. */
  @Post()
  @SuccessResponse(201, 'Created')
  @Response<Problem>(
    400,
    'Invalid id, metadata or policy; NUL, lone surrogates, `__proto__` keys or nesting over 64 levels',
  )
  @Response<Problem>(409, 'A conversation with this id exists')
  @Response<Problem>(415, 'Unsupported Content-Encoding or charset')
  public async createConversation(@Body() body: CreateConversationBody): Promise<Conversation> {
    let policy;
    if (body.policy !== undefined) {
      const parsed = ZPolicy.safeParse(body.policy);
      if (!parsed.success) {
        const errors = parsed.error.issues.map((i) => ({ path: ['policy', ...i.path].join('.'), message: i.message }));
        throw new AppError('validation_failed', errors.map((e) => `${e.path}: ${e.message}`).join('; '), errors);
      }
      policy = parsed.data;
    }
    const conv = await createConversation(this.services.stores.conversations, {
      id: body.id,
      metadata: body.metadata,
      policy,
    });
    this.setStatus(201);
    return conv;
  }

  @Get('{id}')
  @Response<Problem>(400, 'Malformed URL: bad percent-encoding, a NUL character or an invalid id')
  @Response<Problem>(404, 'No such conversation')
  public async getConversation(@Path() id: Id): Promise<Conversation> {
    return getConversation(this.services.stores.conversations, id);
  }

  /** Deletes the conversation with its resources, permissions and history. */
  @Delete('{id}')
  @SuccessResponse(204, 'Deleted')
  @Response<Problem>(400, 'Malformed URL: bad percent-encoding, a NUL character or an invalid id')
  @Response<Problem>(404, 'No such conversation')
  public async deleteConversation(@Path() id: Id): Promise<void> {
    await deleteConversation(this.services.stores.conversations, id);
    this.setStatus(204);
  }

  /** The conversation in the seed's M5 JSON format. */
  @Get('{id}/state')
  @Response<Problem>(400, 'Malformed URL: bad percent-encoding, a NUL character or an invalid id')
  @Response<Problem>(404, 'No such conversation')
  public async getState(@Path() id: Id): Promise<ConversationState> {
    const { permissions, resources } = this.services.stores;
    return getConversationState(permissions, resources, id);
  }
}
