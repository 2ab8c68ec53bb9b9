// Examples for the OpenAPI spec, read by `tsoa spec` from the decorators that
// name them (@Example, @Response). Plain object literals only: tsoa evaluates
// the initializer itself, so no spreads, `as const` or computed values.
import type { CreatedApiKey, KeyList } from '../responses';

export const createdKeyExample: CreatedApiKey = {
  id: 'key_UFrd5v63ZFiXAeuO',
  role: 'user',
  subject: 'alice',
  conversationId: null,
  maxLevel: null,
  label: null,
  expiresAt: null,
  createdAt: 1795361870989,
  createdBy: 'admin:admin',
  revokedAt: null,
  token: 'tgw_tq6Wr8J1yUw14oea9iYv4wvT5WPu6vPDs9BeXi99KhQ',
};
export const createdAgentKeyExample: CreatedApiKey = {
  id: 'key_Qm3xW8p2LhT5vB7n',
  role: 'agent',
  subject: 'alice',
  conversationId: 'support-42',
  maxLevel: 2,
  label: 'support bot',
  expiresAt: null,
  createdAt: 1795361870989,
  createdBy: 'user:alice',
  revokedAt: null,
  token: 'tgw_8sKq2nV0cX4yR7bT1mZ5wE9uH3jL6pA0dF2gN4kS8oQ',
};
export const keyListExample: KeyList = {
  keys: [
    {
      id: 'key_UFrd5v63ZFiXAeuO',
      role: 'user',
      subject: 'alice',
      conversationId: null,
      maxLevel: null,
      label: null,
      expiresAt: null,
      createdAt: 1795361870989,
      createdBy: 'admin:admin',
      revokedAt: null,
    },
  ],
};
