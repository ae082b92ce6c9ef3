/**
 * The lock as stored in metadata: read, set and lifted without touching other entries under our key.
 */
import { LOCK_KEY, lockOf, setLock } from '../lockmodel';

class Model {
  metadata: Record<string, unknown> = {};
  getMetadata(key: string): unknown {
    return this.metadata[key];
  }
  setMetadata(key: string, value: unknown): void {
    this.metadata[key] = value;
  }
  deleteMetadata(key: string): void {
    delete this.metadata[key];
  }
}

describe('locks', () => {
  it('sets, reads and lifts a lock', () => {
    const model = new Model();
    expect(lockOf(model)).toBeNull();
    setLock(model, 'Ada', new Date('2026-11-28T12:00:00Z'));
    expect(model.metadata[LOCK_KEY]).toEqual({
      locked: { by: 'Ada', at: '2026-11-28T12:00:00.000Z' }
    });
    expect(lockOf(model)).toEqual({
      by: 'Ada',
      at: '2026-11-28T12:00:00.000Z'
    });
    setLock(model, null);
    expect(LOCK_KEY in model.metadata).toBe(false);
    expect(lockOf(model)).toBeNull();
  });

  it('keeps other entries under the key, and names an unnamed lock', () => {
    const model = new Model();
    model.metadata[LOCK_KEY] = { other: 1, locked: true };
    expect(lockOf(model)?.by).toBe('a person');
    setLock(model, null);
    expect(model.metadata[LOCK_KEY]).toEqual({ other: 1 });
    expect(lockOf(null)).toBeNull();
  });
});
