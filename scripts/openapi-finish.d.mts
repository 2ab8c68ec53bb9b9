/** scripts/openapi-finish.mjs: the spec as tsoa wrote it, finished (see that file). */
export function finishSpec(text: string): string;
