/**
 * The address rules as the participant service uses them: a check for a
 * registration's URLs (a reason, or undefined when allowed) and the fetch
 * every upstream request of mcp-http and openapi participants goes through.
 */
import type { UrlCheck } from './participant-validation';

export interface AddressRules {
  check: UrlCheck;
  fetch: typeof fetch;
}

export function addressRules(_allowedHosts: string[]): AddressRules {
  // Placeholder until address-rules.ts (link-local and metadata addresses refused) is merged.
  return {
    check: (url) => {
      try {
        const u = new URL(url);
        return u.protocol === 'http:' || u.protocol === 'https:' ? undefined : 'must be an http or https URL';
      } catch {
        return 'must be an absolute http or https URL';
      }
    },
    fetch: globalThis.fetch,
  };
}
