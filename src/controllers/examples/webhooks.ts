// Examples for the OpenAPI spec (webhooks), read by `tsoa spec` from the
// decorators that name them. Plain object literals only.
import type { CreatedWebhookResponse, WebhookDeliveryList, WebhookList } from '../responses';

export const createdWebhookExample: CreatedWebhookResponse = {
  id: '3f7c1a52-9b0e-4d7a-8c61-2e5b9a4d7f10',
  url: 'https://hooks.example.com/gateway',
  events: ['approval.requested', 'approval.decided'],
  conversationId: null,
  enabled: true,
  createdAt: 1795361870989,
  secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
};

export const webhookListExample: WebhookList = {
  webhooks: [
    {
      id: '3f7c1a52-9b0e-4d7a-8c61-2e5b9a4d7f10',
      url: 'https://hooks.example.com/gateway',
      events: ['approval.requested', 'approval.decided'],
      conversationId: null,
      enabled: true,
      createdAt: 1795361870989,
    },
  ],
};

export const webhookDeliveriesExample: WebhookDeliveryList = {
  deliveries: [
    {
      eventId: 1042,
      type: 'approval.requested',
      attempt: 2,
      status: 'delivered',
      responseStatus: 204,
      at: 1795361876120,
    },
    {
      eventId: 1042,
      type: 'approval.requested',
      attempt: 1,
      status: 'failed',
      responseStatus: 503,
      at: 1795361871020,
      error: 'the receiver answered 503',
    },
  ],
};
