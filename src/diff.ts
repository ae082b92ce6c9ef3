/**
 * A line diff for showing a suggestion against the live text: pure, so jest tests it directly.
 *
 * Bounded: the common head and tail are cut off first (an agent's edit usually touches a few lines), and
 * the longest-common-subsequence table of what remains is built only up to `DIFF_CELLS` entries; past that
 * the middle shows as removed then added, which is still correct, only coarser. The diff runs in the
 * browser's main thread on each change of a suggestion, so its cost must not follow the document's size.
 */

/** Most entries of the LCS table (lines removed x lines added) the diff builds. */
export const DIFF_CELLS = 250_000;

/** One line of a diff. */
export interface IDiffLine {
  kind: 'same' | 'add' | 'del';
  text: string;
}

/** The lines of a text ("" has none; a final newline adds no empty line). */
export function splitLines(text: string): string[] {
  if (!text) {
    return [];
  }
  const lines = text.split('\n');
  if (lines[lines.length - 1] === '') {
    lines.pop();
  }
  return lines;
}

/** The lines of `before` and `after` as kept, removed and added lines, in order (removals first). */
export function lineDiff(before: string, after: string): IDiffLine[] {
  const a = splitLines(before);
  const b = splitLines(after);
  let head = 0;
  while (head < a.length && head < b.length && a[head] === b[head]) {
    head++;
  }
  let tail = 0;
  while (
    tail < a.length - head &&
    tail < b.length - head &&
    a[a.length - 1 - tail] === b[b.length - 1 - tail]
  ) {
    tail++;
  }
  const out: IDiffLine[] = a
    .slice(0, head)
    .map(text => ({ kind: 'same', text }));
  const midA = a.slice(head, a.length - tail);
  const midB = b.slice(head, b.length - tail);
  out.push(...middle(midA, midB));
  for (const text of a.slice(a.length - tail)) {
    out.push({ kind: 'same', text });
  }
  return out;
}

function middle(a: string[], b: string[]): IDiffLine[] {
  const n = a.length;
  const m = b.length;
  if (n === 0 || m === 0 || n * m > DIFF_CELLS) {
    return [
      ...a.map(text => ({ kind: 'del' as const, text })),
      ...b.map(text => ({ kind: 'add' as const, text }))
    ];
  }
  // lcs[i * (m + 1) + j]: length of the longest common subsequence of a[i:] and b[j:].
  const width = m + 1;
  const lcs = new Uint32Array((n + 1) * width);
  for (let i = n - 1; i >= 0; i--) {
    for (let j = m - 1; j >= 0; j--) {
      lcs[i * width + j] =
        a[i] === b[j]
          ? lcs[(i + 1) * width + j + 1] + 1
          : Math.max(lcs[(i + 1) * width + j], lcs[i * width + j + 1]);
    }
  }
  const out: IDiffLine[] = [];
  let i = 0;
  let j = 0;
  while (i < n && j < m) {
    if (a[i] === b[j]) {
      out.push({ kind: 'same', text: a[i] });
      i++;
      j++;
    } else if (lcs[(i + 1) * width + j] >= lcs[i * width + j + 1]) {
      out.push({ kind: 'del', text: a[i++] });
    } else {
      out.push({ kind: 'add', text: b[j++] });
    }
  }
  while (i < n) {
    out.push({ kind: 'del', text: a[i++] });
  }
  while (j < m) {
    out.push({ kind: 'add', text: b[j++] });
  }
  return out;
}

/** Counts of added and removed lines ("+2 −1" in a header). */
export function diffStats(lines: IDiffLine[]): {
  added: number;
  removed: number;
} {
  let added = 0;
  let removed = 0;
  for (const line of lines) {
    if (line.kind === 'add') {
      added++;
    } else if (line.kind === 'del') {
      removed++;
    }
  }
  return { added, removed };
}
