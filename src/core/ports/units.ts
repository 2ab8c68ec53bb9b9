/** A transaction handle and the units of work that make them (src/db/unit-of-work.ts implements them). */

declare const transactionBrand: unique symbol;
/** An open transaction of a unit of work; statements given it run inside it. */
export type Transaction = { readonly [transactionBrand]: true };

/**
 * One action's writes: a transaction begun on the first statement that
 * needs it (an action that writes nothing costs no BEGIN/COMMIT), then
 * committed, rolled back or abandoned. Once ended it begins no more.
 */
export interface UnitOfWork {
  transaction(): Promise<Transaction>;
  /** The transaction when one was begun, without beginning one (undefined: nothing written yet). */
  begun(): Promise<Transaction> | undefined;
  commit(): Promise<void>;
  rollback(): Promise<void>;
  /**
   * After a timeout, when the handler may still use the transaction: its
   * connection is destroyed, which also rolls it back.
   */
  abandon(): Promise<void>;
}

export interface UnitsOfWork {
  /** A new unit of work; nothing happens until its first statement. */
  start(): UnitOfWork;
  /**
   * A unit of one statement that commits on its own (an action's single
   * write, ActionDefinition.singleWrite): no BEGIN/COMMIT. An audit entry
   * written ahead of it (AuditStore.ahead) is inserted by that same
   * statement, only if it changes a row; begun() is then its handle, else
   * undefined. A second statement is refused. commit() and rollback() end it
   * (the statement has committed or failed by then); abandon() cancels a
   * statement still running and waits for it to end.
   */
  startSingle(): UnitOfWork;
}
