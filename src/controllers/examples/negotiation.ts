// Examples for the OpenAPI spec, read by `tsoa spec` from the decorators that
// name them (@Example, @Response). Plain object literals only: tsoa evaluates
// the initializer itself, so no spreads, `as const` or computed values.
// Values are what the service answers (test/http/openapi-examples.test.ts
// checks the negotiate ones against the real app).
import type { NegotiationResult } from '../../core/negotiation';

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
const ECHO_ROUTING = { tool: 'everything', action: 'echo', confidence: 1, explicit: true };
export const toolDefinitionChangedExample: NegotiationResult = {
  success: false,
  error:
    'The definition of everything/echo changed at participant everything; it cannot run until an admin approves the new definition',
  code: 'tool_definition_changed',
  alignment: 'aligned',
  routing: ECHO_ROUTING,
};
export const participantUnavailableExample: NegotiationResult = {
  success: false,
  error: 'Participant everything is unavailable; retry after 4 s',
  code: 'participant_unavailable',
  retryAfterSeconds: 4,
  alignment: 'aligned',
  routing: ECHO_ROUTING,
};
export const dependencyUnmetExample: NegotiationResult = {
  success: false,
  error:
    'analytics-tool/summarize-resource needs first: sales (it does not exist; produced by data-tool/create-resource, data-tool/update-resource, transform-tool/transform-resource)',
  code: 'dependency_unmet',
  output: {
    missing: [
      {
        resource: 'sales',
        producers: ['data-tool/create-resource', 'data-tool/update-resource', 'transform-tool/transform-resource'],
        reason: 'absent',
      },
    ],
  },
  alignment: 'aligned',
  routing: { tool: 'analytics-tool', action: 'summarize-resource', confidence: 1, explicit: true },
};
