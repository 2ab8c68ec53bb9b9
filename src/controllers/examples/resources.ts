// Examples for the OpenAPI spec, read by `tsoa spec` from the decorators that
// name them (@Example, @Response). Plain object literals only: tsoa evaluates
// the initializer itself, so no spreads, `as const` or computed values.
import type { Resource } from '../../core/tool-interface';
import type { ResourcePage } from '../responses';

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
