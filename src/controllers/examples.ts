// Examples for the OpenAPI spec, read by `tsoa spec` from the decorators that
// name them (@Example, @Response). Plain object literals only: tsoa evaluates
// the initializer itself, so no spreads, `as const` or computed values.
// Values are what the service answers (test/http/openapi-examples.test.ts
// checks the negotiate ones against the real app).
import type { NegotiationResult } from '../core/negotiation';
import type { Problem } from '../http/problem';
import type { Resource } from '../core/tool-interface';
import type {
  ApprovalList,
  ApprovalView,
  CreatedApiKey,
  KeyList,
  LevelChange,
  PermissionHistory,
  Permissions,
  ResourcePage,
} from './responses';

const REQUEST_ID = '3f8e2a5c-9d41-4b7e-8a16-2c5d0e9b7f30';

// Problems (application/problem+json), one per code.

export const validationFailedExample: Problem = {
  type: 'urn:problem:validation_failed',
  title: 'Validation failed',
  status: 400,
  detail: 'format: must be one of openai, anthropic, mcp, canonical',
  code: 'validation_failed',
  errors: [{ path: 'format', message: 'must be one of openai, anthropic, mcp, canonical' }],
  requestId: REQUEST_ID,
};
export const bodyValidationFailedExample: Problem = {
  type: 'urn:problem:validation_failed',
  title: 'Validation failed',
  status: 400,
  detail: "action: 'action' is required",
  code: 'validation_failed',
  errors: [{ path: 'action', message: "'action' is required" }],
  requestId: REQUEST_ID,
};
export const badUrlExample: Problem = {
  type: 'urn:problem:validation_failed',
  title: 'Validation failed',
  status: 400,
  detail: 'path: has malformed percent-encoding',
  code: 'validation_failed',
  errors: [{ path: 'path', message: 'has malformed percent-encoding' }],
  requestId: REQUEST_ID,
};
export const unauthorizedExample: Problem = {
  type: 'urn:problem:unauthorized',
  title: 'Unauthorized',
  status: 401,
  detail: 'This endpoint needs Authorization: Bearer TOKEN',
  code: 'unauthorized',
  requestId: REQUEST_ID,
};
export const forbiddenExample: Problem = {
  type: 'urn:problem:forbidden',
  title: 'Forbidden',
  status: 403,
  detail: 'A principal with role user may not mint keys (only admins may)',
  code: 'forbidden',
  requestId: REQUEST_ID,
};
export const conversationNotFoundExample: Problem = {
  type: 'urn:problem:not_found',
  title: 'Not found',
  status: 404,
  detail: 'Conversation not found: support-42',
  code: 'not_found',
  requestId: REQUEST_ID,
};
export const resourceNotFoundExample: Problem = {
  type: 'urn:problem:not_found',
  title: 'Not found',
  status: 404,
  detail: 'Resource not found: notes',
  code: 'not_found',
  requestId: REQUEST_ID,
};
export const notFoundExample: Problem = {
  type: 'urn:problem:not_found',
  title: 'Not found',
  status: 404,
  detail: 'Tool not found: weather-tool',
  code: 'not_found',
  requestId: REQUEST_ID,
};
export const conflictExample: Problem = {
  type: 'urn:problem:conflict',
  title: 'Conflict',
  status: 409,
  detail: 'Conversation already exists: support-42',
  code: 'conflict',
  requestId: REQUEST_ID,
};
export const idempotencyInFlightExample: Problem = {
  type: 'urn:problem:conflict',
  title: 'Conflict',
  status: 409,
  detail: 'A request with this Idempotency-Key is still running; retry later to get its outcome',
  code: 'conflict',
  requestId: REQUEST_ID,
};
export const approvalConflictExample: Problem = {
  type: 'urn:problem:conflict',
  title: 'Conflict',
  status: 409,
  detail: 'Approval apr_A2k3sjj3kmXySulM is not pending: only a pending request can be approved or rejected',
  code: 'conflict',
  requestId: REQUEST_ID,
};
export const preconditionFailedExample: Problem = {
  type: 'urn:problem:precondition_failed',
  title: 'Precondition failed',
  status: 412,
  detail: 'Resource version is 3, If-Match asked for "2"',
  code: 'precondition_failed',
  requestId: REQUEST_ID,
};
export const payloadTooLargeExample: Problem = {
  type: 'urn:problem:payload_too_large',
  title: 'Payload too large',
  status: 413,
  detail: 'Request body is larger than BODY_LIMIT',
  code: 'payload_too_large',
  requestId: REQUEST_ID,
};
export const unsupportedMediaTypeExample: Problem = {
  type: 'urn:problem:unsupported_media_type',
  title: 'Unsupported media type',
  status: 415,
  detail: 'Unsupported charset; send UTF-8',
  code: 'unsupported_media_type',
  requestId: REQUEST_ID,
};
export const idempotencyKeyReusedExample: Problem = {
  type: 'urn:problem:idempotency_key_reused',
  title: 'Idempotency key reused',
  status: 422,
  detail: 'This Idempotency-Key was used with another request body',
  code: 'idempotency_key_reused',
  requestId: REQUEST_ID,
};
export const unavailableExample: Problem = {
  type: 'urn:problem:unavailable',
  title: 'Service unavailable',
  status: 503,
  detail: 'The database is unavailable; retry later',
  code: 'unavailable',
  requestId: REQUEST_ID,
};

// Negotiate's outcomes (application/json NegotiationResult), one per code of API.md's Negotiate table.

const CREATE_ROUTING = { tool: 'data-tool', action: 'create-resource', confidence: 1, explicit: false };

export const negotiatedExample: NegotiationResult = {
  success: true,
  output: {
    message: 'Resource created by data-tool',
    resource: {
      name: 'notes',
      data: { text: 'hello' },
      createdBy: 'data-tool',
      updatedBy: 'data-tool',
      createdAt: 1795361868918,
      updatedAt: 1795361868918,
      version: 1,
    },
  },
  alignment: 'agnostic',
  routing: CREATE_ROUTING,
};
export const negotiatedDryRunExample: NegotiationResult = {
  success: true,
  alignment: 'aligned',
  routing: { tool: 'data-tool', action: 'read-resource', confidence: 1, explicit: false },
};
export const invalidArgsExample: NegotiationResult = {
  success: false,
  error: 'Invalid args for data-tool/create-resource: name: Invalid input: expected string, received number',
  code: 'invalid_args',
  alignment: 'agnostic',
  routing: CREATE_ROUTING,
};
export const permissionRequiredExample: NegotiationResult = {
  success: false,
  error: 'Permission upgrade required for data-tool/create-resource',
  code: 'permission_required',
  requiresApproval: true,
  approvalReason:
    'Permission upgrade required: data-tool needs level 2 (write) for create-resource, but its current level in this conversation is 1 (read). The conversation owner can approve with upgrade:data-tool:level-2.',
  approval: { id: 'apr_A2k3sjj3kmXySulM', status: 'pending', expiresAt: 1795365468574 },
  alignment: 'agnostic',
  routing: CREATE_ROUTING,
};
export const deniedExample: NegotiationResult = {
  success: false,
  error: "Action data-tool/delete-resource is denied by this conversation's policy (data-tool/delete-*)",
  code: 'denied',
  alignment: 'contradiction',
  routing: { tool: 'data-tool', action: 'delete-resource', confidence: 1, explicit: false },
};
export const noToolExample: NegotiationResult = {
  success: false,
  error: 'No tool found for action: fly-plane',
  code: 'no_tool',
  output: { suggestions: [] },
};
export const unknownToolExample: NegotiationResult = {
  success: false,
  error: 'Unknown tool: weather-tool',
  code: 'unknown_tool',
};
export const resourceNotFoundOutcomeExample: NegotiationResult = {
  success: false,
  error: 'Resource not found: notes',
  code: 'resource_not_found',
  alignment: 'aligned',
  routing: { tool: 'data-tool', action: 'read-resource', confidence: 1, explicit: false },
};
export const ambiguousActionExample: NegotiationResult = {
  success: false,
  error: 'Several tools offer add: name one (calculator/add, math-service/add)',
  code: 'ambiguous_action',
  output: { candidates: ['calculator/add', 'math-service/add'] },
};
export const resourceExistsExample: NegotiationResult = {
  success: false,
  error: 'Resource already exists: notes',
  code: 'resource_exists',
  alignment: 'agnostic',
  routing: CREATE_ROUTING,
};
export const resourceTooLargeExample: NegotiationResult = {
  success: false,
  error: 'Resource data is 300000 bytes; the limit is 262144 bytes (RESOURCE_MAX_BYTES)',
  code: 'resource_too_large',
  alignment: 'agnostic',
  routing: CREATE_ROUTING,
};
export const toolErrorExample: NegotiationResult = {
  success: false,
  error: 'Tool data-tool failed while running create-resource',
  code: 'tool_error',
  alignment: 'agnostic',
  routing: CREATE_ROUTING,
};

// Successful answers of the resources, permissions, keys and approvals endpoints.

export const resourceExample: Resource = {
  name: 'notes',
  data: { text: 'hello' },
  createdBy: 'client',
  updatedBy: 'client',
  createdAt: 1795361868918,
  updatedAt: 1795361868918,
  version: 1,
};
export const resourcePageExample: ResourcePage = {
  resources: [
    {
      name: 'notes',
      data: { text: 'hello' },
      createdBy: 'client',
      updatedBy: 'client',
      createdAt: 1795361868918,
      updatedAt: 1795361868918,
      version: 1,
    },
  ],
  nextCursor: null,
};
export const permissionsExample: Permissions = {
  conversationId: 'support-42',
  legacyLevel: null,
  tools: [
    { tool: 'calculator', level: 1, source: 'default', upgradedAt: null },
    { tool: 'data-tool', level: 2, source: 'explicit', upgradedAt: 1795361870989 },
  ],
};
export const levelChangeExample: LevelChange = { tool: 'data-tool', level: 2, previousLevel: 1 };
export const permissionHistoryExample: PermissionHistory = {
  events: [{ tool: 'data-tool', fromLevel: 1, toLevel: 2, at: 1795361870989, actor: 'admin:admin' }],
};
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
export const pendingApprovalExample: ApprovalView = {
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
};
export const approvedExample: ApprovalView = {
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
  status: 'approved',
  createdAt: 1795361868574,
  expiresAt: 1795365470000,
  decidedBy: 'user:alice',
  decidedAt: 1795361870000,
  scope: 'once',
  reason: null,
};
export const rejectedExample: ApprovalView = {
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
  status: 'rejected',
  createdAt: 1795361868574,
  expiresAt: 1795365468574,
  decidedBy: 'user:alice',
  decidedAt: 1795361870000,
  scope: null,
  reason: 'Notes are kept in the wiki',
};
export const approvalListExample: ApprovalList = {
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
};
