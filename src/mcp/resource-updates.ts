/**
 * `notifications/resources/updated` (API.md, "Shared context, M6",
 * Subscriptions): each resource event of the log (created, updated, deleted,
 * expired) becomes a `resource_updated` event of the resource's URI
 * (context://CONVERSATION/NAME) on this replica's MCP streams. Every replica
 * reads the whole event log (src/core/events.ts), so each hands the event to
 * its own streams only: nothing is published to the other replicas.
 *
 * The log is read only while a stream listens (the first listener starts the
 * feed's reading, the last one stops it), so an app serving no stream costs
 * nothing more. Which streams get which URI: a `subscriptions/listen` stream
 * the URIs it asked for (of its own conversation: narrowListenFilter), a 2025
 * GET stream every resource of its conversation (legacy-stream.ts).
 */
import type { ServerEvent } from '@modelcontextprotocol/server';
import type { EventFeed } from '../core/events';
import type { Logger } from '../logger';
import type { McpEventBus } from './event-bus';
import { resourceUri } from './conversation-server';

/** The bus as the streams see it: the same one, whose listeners also hear this replica's resource events. */
export function withResourceUpdates(bus: McpEventBus, feed: EventFeed, log: Logger): McpEventBus {
  let listeners = 0;
  let unlisten: Promise<(() => void) | undefined> | undefined;
  const start = (): void => {
    unlisten = feed
      .listen((e) => {
        if (!e.type.startsWith('resource.') || e.conversationId === null) return;
        const name = (e.subject as { name?: unknown }).name;
        if (typeof name === 'string')
          bus.publishLocally({ kind: 'resource_updated', uri: resourceUri(e.conversationId, name) });
      })
      .catch((err: unknown) => {
        log.warn({ err }, 'MCP resource updates: the event log cannot be read');
        return undefined;
      });
  };
  const stop = (): void => {
    const pending = unlisten;
    unlisten = undefined;
    void pending?.then((off) => off?.());
  };
  return {
    ready: () => bus.ready(),
    hold: () => bus.hold(),
    publish: (event) => bus.publish(event),
    publishLocally: (event) => bus.publishLocally(event),
    subscribe: (listener: (event: ServerEvent) => void): (() => void) => {
      const off = bus.subscribe(listener);
      if (listeners++ === 0) start();
      let done = false;
      return () => {
        if (done) return;
        done = true;
        off();
        if (--listeners === 0) stop();
      };
    },
    close: async () => {
      stop();
      await bus.close();
    },
  };
}

/**
 * A `subscriptions/listen` request's resource URIs, kept to those of this
 * conversation: the streams of every conversation share one bus, and a
 * client may hear only of its own conversation's resources (the others are
 * not honored, and the acknowledgement says so).
 */
export function narrowListenFilter(body: unknown, conversationId: string): void {
  const notifications = (body as { params?: { notifications?: { resourceSubscriptions?: unknown } } } | undefined)
    ?.params?.notifications;
  if (!notifications || !Array.isArray(notifications.resourceSubscriptions)) return;
  const prefix = resourceUri(conversationId, '');
  notifications.resourceSubscriptions = notifications.resourceSubscriptions.filter(
    (uri): uri is string => typeof uri === 'string' && uri.startsWith(prefix),
  );
}
