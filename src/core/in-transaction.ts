/** Running work in a unit of work of its own, for the core services that decide inside one. */
import type { Transaction, UnitsOfWork } from './ports';

/** `work` in a transaction of its own: committed when it resolves, rolled back when it throws. */
export async function inOwnTransaction<T>(units: UnitsOfWork, work: (tx: Transaction) => Promise<T>): Promise<T> {
  const unit = units.start();
  try {
    const out = await work(await unit.transaction());
    await unit.commit();
    return out;
  } catch (err) {
    await unit.rollback();
    throw err;
  }
}
