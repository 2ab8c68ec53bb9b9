/**
 * The address rules (address-rules.ts) as the participant service uses them:
 * a check for a registration's URLs (a reason, or undefined when allowed)
 * and the one guarded fetch every upstream request of mcp-http and openapi
 * participants goes through (link-local and metadata addresses refused,
 * also after redirects and DNS resolution, unless PARTICIPANT_ALLOWED_HOSTS
 * lists them).
 */
import { checkUpstreamUrl, createGuardedFetch, type GuardedFetch } from './address-rules';
import type { UrlCheck } from './participant-validation';

export interface AddressRules {
  check: UrlCheck;
  fetch: GuardedFetch;
}

export function addressRules(allowedHosts: readonly string[]): AddressRules {
  return {
    check: (url) => {
      const checked = checkUpstreamUrl(url, allowedHosts);
      return checked.ok ? undefined : checked.message;
    },
    fetch: createGuardedFetch({ allowedHosts }),
  };
}
