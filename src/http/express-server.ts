/**
 * The HTTP server the app runs in (server.ts), with requests and responses
 * created with express's prototypes from the start.
 *
 * express gives every request and response its own prototypes as it enters
 * the app: `Object.setPrototypeOf(req, app.request)` and likewise for `res`
 * (express/lib/application.js, `app.handle`). Changing the prototype of an
 * object that Node's HTTP code has already built and used invalidates V8's
 * assumptions about it, and the HTTP internals that touch these objects for
 * the rest of the request run slower. Measured on this project's machine
 * (docs/BENCHMARKS.md, §8): a bare express + pg server spends ~110-250 µs of
 * CPU less per request when the server creates the objects with those
 * prototypes already, which is what this does; express's own
 * setPrototypeOf then finds the prototype in place and changes nothing.
 *
 * The objects are still IncomingMessage and ServerResponse (Node's
 * documented `IncomingMessage`/`ServerResponse` server options, "useful for
 * extending the original"): the constructors run unchanged, only the
 * prototype the object starts with differs.
 */
import { IncomingMessage, ServerResponse, createServer, type RequestListener, type Server } from 'node:http';
import type { Express } from 'express';

/** Node's constructors are plain functions (not classes), so a function can run them on an object of its own. */
function isPlainFunction(f: unknown): boolean {
  return typeof f === 'function' && !/^class[\s{]/.test(Function.prototype.toString.call(f));
}

type AnyFn = (this: unknown, ...args: unknown[]) => void;

/** An HTTP server whose requests and responses are born with `app`'s prototypes; `listener` handles them. */
export function createExpressServer(app: Express, listener: RequestListener = app): Server {
  // Should Node's constructors ever become classes, the server is a plain one (slower, same behaviour).
  if (!isPlainFunction(IncomingMessage) || !isPlainFunction(ServerResponse)) return createServer(listener);
  // `new Request(socket)` is an IncomingMessage born with app.request as its prototype (and so on).
  // Plain functions calling the constructors: V8 keeps one fast initial map per function
  // (Reflect.construct with another new.target measured slower).
  const incoming = IncomingMessage as unknown as AnyFn;
  const outgoing = ServerResponse as unknown as AnyFn;
  function Request(this: unknown, socket: unknown): void {
    incoming.call(this, socket);
  }
  function Response(this: unknown, req: unknown, options: unknown): void {
    outgoing.call(this, req, options);
  }
  Request.prototype = app.request;
  Response.prototype = app.response;
  return createServer(
    {
      IncomingMessage: Request as unknown as typeof IncomingMessage,
      ServerResponse: Response as unknown as typeof ServerResponse,
    },
    listener,
  );
}
