/**
 * The lock as stored in a cell's or a notebook's metadata (`jupyter_pair_mcp.locked = {by, at}`): read, set and
 * lifted through the model's metadata accessors, so the change is the person's edit in the shared document.
 * Kept apart from src/locks.ts (the buttons and marks) so it loads without the UI components.
 */
import { trans } from './i18n';

/** The metadata key this extension owns; its `locked` entry is a person's lock. */
export const LOCK_KEY = 'jupyter_pair_mcp';
/** A lock as stored: who set it and when. */
export interface ILock {
  by: string;
  at: string;
}

/** Anything with metadata accessors: a cell model or a notebook model. */
interface IHasMetadata {
  getMetadata(key: string): unknown;
  setMetadata(key: string, value: unknown): void;
  deleteMetadata(key: string): void;
}

/** The lock in a model's metadata, null when unlocked. */
export function lockOf(model: IHasMetadata | null | undefined): ILock | null {
  const ours = model?.getMetadata(LOCK_KEY) as
    { locked?: Partial<ILock> | boolean } | undefined;
  const locked = ours && typeof ours === 'object' ? ours.locked : undefined;
  if (!locked) {
    return null;
  }
  const by = typeof locked === 'object' ? String(locked.by ?? '') : '';
  const at = typeof locked === 'object' ? String(locked.at ?? '') : '';
  return { by: by || trans.__('a person'), at };
}

/** Lock (by `person`) or unlock a cell or notebook, keeping any other entry under our key. */
export function setLock(
  model: IHasMetadata,
  person: string | null,
  now: Date = new Date()
): void {
  const current = model.getMetadata(LOCK_KEY);
  const ours: Record<string, unknown> =
    current && typeof current === 'object' ? { ...current } : {};
  if (person === null) {
    delete ours.locked;
  } else {
    ours.locked = { by: person, at: now.toISOString() };
  }
  if (Object.keys(ours).length) {
    model.setMetadata(LOCK_KEY, ours);
  } else {
    model.deleteMetadata(LOCK_KEY);
  }
}
