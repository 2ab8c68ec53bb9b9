/**
 * Local `$ref` resolution for OpenAPI documents, our own and small on
 * purpose: only references inside the document (`#/components/...`, any JSON
 * pointer) are followed; a reference to another file or URL is refused, since
 * following it would make the service fetch addresses nobody registered.
 * (@apidevtools' json-schema-ref-parser and swagger-parser need Node >= 22.19.)
 */
import { isRecord } from '../core/tool-module';
import { OpenApiDocumentError } from './openapi-http';

/** Resolving `$ref`s copies what they point at; a document that expands past this is refused (no "billion laughs"). */
export const MAX_RESOLVED_NODES = 200_000;

/** The document, copied, with every local `$ref` replaced by what it points at. */
export function resolveLocalRefs(
  root: Record<string, unknown>,
  options: { keepSiblings: boolean },
): Record<string, unknown> {
  return new RefResolver(root, options.keepSiblings).resolveDocument();
}

/**
 * Copies the document with every local `$ref` replaced by (a copy of) what it
 * points at. A reference met again while it is being resolved (a recursive
 * schema) is cut: that inner occurrence becomes `{ $comment }`, which accepts
 * anything. In 3.1 a `$ref`'s sibling keywords are kept beside it (in 3.0
 * they are ignored, as the specification says).
 */
class RefResolver {
  private readonly done = new Map<string, Resolved>();
  private readonly active = new Set<string>();

  constructor(
    private readonly root: Record<string, unknown>,
    private readonly keepSiblings: boolean,
  ) {}

  resolveDocument(): Record<string, unknown> {
    return this.walk(this.root).value as Record<string, unknown>;
  }

  private walk(node: unknown): Resolved {
    if (Array.isArray(node)) {
      const items = node.map((item) => this.walk(item));
      return this.counted(
        items.map((i) => i.value),
        items.reduce((sum, i) => sum + i.size, 1),
      );
    }
    if (!isRecord(node)) return { value: node, size: 1 };
    if (typeof node.$ref === 'string') return this.reference(node.$ref, node);
    const out: Record<string, unknown> = {};
    let size = 1;
    for (const [key, value] of Object.entries(node)) {
      if (key === '__proto__') throw new OpenApiDocumentError('The OpenAPI document has a "__proto__" key');
      // Extensions are the document author's own data: copied, not interpreted.
      const child = key.startsWith('x-') ? { value, size: 1 } : this.walk(value);
      out[key] = child.value;
      size += child.size;
    }
    return this.counted(out, size);
  }

  private reference(ref: string, node: Record<string, unknown>): Resolved {
    const target = this.target(ref);
    let resolved: Resolved;
    if (this.active.has(ref)) {
      resolved = { value: { $comment: `recursive reference ${ref}, not expanded` }, size: 1 };
    } else {
      resolved = this.done.get(ref) ?? this.resolveTarget(ref, target);
    }
    const siblings = Object.keys(node).filter((k) => k !== '$ref');
    if (!this.keepSiblings || siblings.length === 0 || !isRecord(resolved.value)) return resolved;
    const rest = this.walk(Object.fromEntries(siblings.map((k) => [k, node[k]])));
    return this.counted({ ...resolved.value, ...(rest.value as object) }, resolved.size + rest.size);
  }

  private resolveTarget(ref: string, target: unknown): Resolved {
    this.active.add(ref);
    try {
      const resolved = this.walk(target);
      this.done.set(ref, resolved);
      return resolved;
    } finally {
      this.active.delete(ref);
    }
  }

  private target(ref: string): unknown {
    if (!ref.startsWith('#')) {
      throw new OpenApiDocumentError(
        `The OpenAPI document's $ref "${clip(ref)}" points outside the document: only local references (#/components/...) are supported`,
      );
    }
    let node: unknown = this.root;
    const tokens = ref === '#' || ref === '#/' ? [] : ref.slice(2).split('/');
    for (const token of tokens) {
      const key = decodePointerToken(token);
      const next: unknown = Array.isArray(node)
        ? node[Number(key)]
        : isRecord(node) && Object.hasOwn(node, key)
          ? node[key]
          : undefined;
      if (next === undefined)
        throw new OpenApiDocumentError(`The OpenAPI document's $ref "${clip(ref)}" points nowhere`);
      node = next;
    }
    return node;
  }

  private counted(value: unknown, size: number): Resolved {
    if (size > MAX_RESOLVED_NODES) {
      throw new OpenApiDocumentError(
        `The OpenAPI document expands past ${MAX_RESOLVED_NODES} nodes once its $refs are resolved`,
      );
    }
    return { value, size };
  }
}

interface Resolved {
  value: unknown;
  size: number;
}

function decodePointerToken(token: string): string {
  let decoded: string;
  try {
    decoded = decodeURIComponent(token);
  } catch {
    decoded = token;
  }
  return decoded.replace(/~1/g, '/').replace(/~0/g, '~');
}

function clip(text: string): string {
  return text.length > 120 ? `${text.slice(0, 117)}...` : text;
}
