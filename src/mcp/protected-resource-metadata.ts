/**
 * RFC 9728 protected resource metadata of a conversation's MCP endpoint:
 * where a client that got our 401 learns how to authenticate there. Public
 * (no token).
 */
import type { Request, Response } from 'express';
import { ID_RULE, isValidId } from '../core/resource-names';
import { sendProblem } from '../http/middleware';
import type { Services } from '../services';

export const METADATA_PATH = '/.well-known/oauth-protected-resource/conversations/:conversationId/mcp';

/** The GET handler of METADATA_PATH. */
export function protectedResourceMetadata(services: Services): (req: Request, res: Response) => void {
  return (req, res) => {
    const conversationId = req.params.conversationId;
    if (!isValidId(conversationId)) {
      return sendProblem(res, 'validation_failed', `conversationId ${ID_RULE}`, [
        { path: 'conversationId', message: ID_RULE },
      ]);
    }
    const base = `${req.protocol}://${req.get('host') ?? 'localhost'}`;
    const jwt = services.config.jwt;
    res.json({
      resource: `${base}/conversations/${encodeURIComponent(conversationId)}/mcp`,
      ...(jwt ? { authorization_servers: [jwt.issuer] } : {}),
      bearer_methods_supported: ['header'],
      resource_name: `Tool gateway MCP server of conversation ${conversationId}`,
    });
  };
}
