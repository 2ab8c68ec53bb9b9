import pino, { type Logger } from 'pino';

export type { Logger };

/** Structured JSON logs on stdout. Secrets and bodies are never logged. */
export function createLogger(level: string): Logger {
  return pino({
    level,
    base: { service: 'tool-orchestrator' },
    timestamp: pino.stdTimeFunctions.isoTime,
    redact: ['req.headers.authorization', 'req.headers.cookie'],
  });
}
