-- The audit log's sealer runs in the database: audit_seal(max_rows) moves up
-- to max_rows pending entries (in id order) into "audit_log", numbered from
-- "audit_seq" in that order and chained per conversation, exactly as the
-- service's code chained them before (src/core/audit.ts, entryHash: hash =
-- SHA-256 hex of prev_hash + the entry's canonical JSON, keys sorted, absent
-- fields left out), and returns how many it moved. The caller holds the
-- sealing advisory lock and the transaction (src/db/audit-store.ts). Moving
-- the hashing here takes it off the service's event loop, which serves the
-- requests; the entries and their hashes are the same, and GET …/audit/verify
-- still recomputes every hash in the service.

CREATE FUNCTION audit_seal(max_rows integer) RETURNS integer
LANGUAGE plpgsql AS $fn$
DECLARE
  ids bigint[];
  seqs bigint[];
  out_ids bigint[] := '{}';
  out_seqs bigint[] := '{}';
  out_prevs text[] := '{}';
  out_hashes text[] := '{}';
  e record;
  conv text := NULL;
  head text;
  head_seq bigint;
  s bigint;
  body text;
  h text;
BEGIN
  SELECT array_agg(p.id ORDER BY p.id) INTO ids
    FROM (SELECT id FROM audit_pending ORDER BY id LIMIT max_rows) p;
  IF ids IS NULL THEN
    RETURN 0;
  END IF;
  -- Sequence numbers in id order: the n-th pending entry gets the n-th number.
  SELECT array_agg(q.v ORDER BY q.v) INTO seqs
    FROM (SELECT nextval('audit_seq') AS v FROM generate_series(1, cardinality(ids))) q;

  -- One chain after the other, each in id order.
  FOR e IN
    SELECT p.*, r.rn
      FROM audit_pending p JOIN unnest(ids) WITH ORDINALITY AS r(id, rn) ON r.id = p.id
     ORDER BY p.conversation_id, p.id
  LOOP
    IF conv IS DISTINCT FROM e.conversation_id THEN
      IF conv IS NOT NULL THEN
        INSERT INTO audit_heads (conversation_id, seq, hash) VALUES (conv, head_seq, head)
          ON CONFLICT (conversation_id) DO UPDATE SET seq = EXCLUDED.seq, hash = EXCLUDED.hash;
      END IF;
      conv := e.conversation_id;
      SELECT ah.hash INTO head FROM audit_heads ah WHERE ah.conversation_id = conv;
      IF head IS NULL THEN
        head := repeat('0', 64);
      END IF;
    END IF;
    s := seqs[e.rn];
    body := '{'
      || CASE WHEN e.action IS NOT NULL THEN '"action":' || to_json(e.action)::text || ',' ELSE '' END
      || '"actor":' || to_json(e.actor)::text || ','
      || CASE WHEN e.approval_id IS NOT NULL THEN '"approvalId":' || to_json(e.approval_id)::text || ',' ELSE '' END
      || CASE WHEN e.args_digest IS NOT NULL THEN '"argsDigest":' || to_json(e.args_digest)::text || ',' ELSE '' END
      || '"at":' || ((extract(epoch FROM e.at) * 1000)::bigint)::text
      || ',"conversationId":' || to_json(e.conversation_id)::text
      || ',"event":' || to_json(e.event)::text
      || ',"outcome":' || to_json(e.outcome)::text
      || ',"prevHash":' || to_json(head)::text
      || ',"requestId":' || to_json(e.request_id)::text
      || ',"seq":' || s::text
      || CASE WHEN e.status IS NOT NULL THEN ',"status":' || e.status::text ELSE '' END
      || CASE WHEN e.tool IS NOT NULL THEN ',"tool":' || to_json(e.tool)::text ELSE '' END
      || '}';
    h := encode(sha256(convert_to(head || body, 'UTF8')), 'hex');
    out_ids := out_ids || e.id;
    out_seqs := out_seqs || s;
    out_prevs := out_prevs || head;
    out_hashes := out_hashes || h;
    head := h;
    head_seq := s;
  END LOOP;
  INSERT INTO audit_heads (conversation_id, seq, hash) VALUES (conv, head_seq, head)
    ON CONFLICT (conversation_id) DO UPDATE SET seq = EXCLUDED.seq, hash = EXCLUDED.hash;

  INSERT INTO audit_log (seq, at, conversation_id, actor, event, tool, action, outcome, status,
                         args_digest, approval_id, request_id, prev_hash, hash)
  SELECT o.seq, p.at, p.conversation_id, p.actor, p.event, p.tool, p.action, p.outcome, p.status,
         p.args_digest, p.approval_id, p.request_id, o.prev, o.hash
    FROM unnest(out_ids, out_seqs, out_prevs, out_hashes) AS o(id, seq, prev, hash)
    JOIN audit_pending p ON p.id = o.id;
  DELETE FROM audit_pending WHERE id = ANY (ids);
  RETURN cardinality(ids);
END
$fn$;
