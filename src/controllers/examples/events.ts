// Examples for the OpenAPI spec of the inbox and the event streams (see approvals.ts for the rules).
import type { ApprovalInboxPage } from '../responses';

export const inboxExample: ApprovalInboxPage = {
  approvals: [
    {
      id: 'apr_A2k3sjj3kmXySulM',
      conversationId: 'support-42',
      kind: 'call',
      tool: 'data-tool',
      action: 'create-resource',
      args: { name: 'notes', data: { text: 'hello' } },
      argsDigest: '9b2f4c1e6a0d3b8f7e5c2a1d4f6b8e0c3a5d7f9b1e2c4a6d8f0b3e5c7a9d1f2e',
      requiredLevel: 2,
      currentLevel: 1,
      requestedBy: 'agent:key_Qm3xW8p2LhT5vB7n',
      status: 'pending',
      createdAt: 1795361868574,
      expiresAt: 1795365468574,
      decidedBy: null,
      decidedAt: null,
      scope: null,
      reason: null,
    },
  ],
  nextCursor: 'MTc5NTM2MTg2ODU3NC5hcHJfQTJrM3NqajNrbVh5U3VsTQ',
};

// One string literal: tsoa evaluates the initializer itself (no concatenation).
// prettier-ignore
export const eventStreamExample =
  'retry: 2000\n\nid: 4127\nevent: approval.requested\ndata: {"type":"approval.requested","conversationId":"support-42","at":1795361868574,"subject":{"id":"apr_A2k3sjj3kmXySulM","conversationId":"support-42","kind":"call","tool":"data-tool","action":"create-resource","status":"pending"}}\n\nid: 4128\nevent: resource.updated\ndata: {"type":"resource.updated","conversationId":"support-42","at":1795361869002,"subject":{"name":"notes","createdBy":"data-tool","updatedBy":"data-tool","createdAt":1795361800000,"updatedAt":1795361869002,"version":3}}\n\n: keep-alive\n\n';
