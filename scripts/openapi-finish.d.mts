/** scripts/openapi-finish.mjs: the spec as tsoa wrote it, finished (see that file). */
export function finishSpec(text: string): string;
/** The pattern of a string the database can store (no NUL, no lone surrogate), given to request strings. */
export const STORABLE_TEXT: string;
