/**
 * The extension's strings go through JupyterLab's translator: the application sets it once at activation
 * (when JupyterLab offers one); until then, and without one, strings stay as written (English).
 */
import {
  ITranslator,
  nullTranslator,
  TranslationBundle
} from '@jupyterlab/translation';

/** The gettext domain of this extension's strings (its Python package's name). */
export const DOMAIN = 'jupyter_pair_mcp';

/**
 * The current translation bundle: `trans.__('Stop %1', name)` (a live binding: importers see the one
 * `setTranslator` sets; named `trans` so JupyterLab's string extractor finds the strings).
 */
export let trans: TranslationBundle = nullTranslator.load(DOMAIN);

/** Use this translator from now on. */
export function setTranslator(translator: ITranslator | null): void {
  trans = (translator ?? nullTranslator).load(DOMAIN);
}

/** Black or white, whichever reads better on `color` (WCAG contrast), for text on a coloured badge. */
export function inkOn(color: string): string {
  const rgb = parseColor(color);
  if (rgb === null) {
    return 'var(--jp-ui-inverse-font-color1)';
  }
  const [r, g, b] = rgb.map(channel => {
    const c = channel / 255;
    return c <= 0.03928 ? c / 12.92 : Math.pow((c + 0.055) / 1.055, 2.4);
  });
  const luminance = 0.2126 * r + 0.7152 * g + 0.0722 * b;
  // Contrast with white: 1.05 / (L + 0.05); with black: (L + 0.05) / 0.05.
  return 1.05 / (luminance + 0.05) >= (luminance + 0.05) / 0.05
    ? '#ffffff'
    : '#000000';
}

/** `#rgb`, `#rrggbb`, `rgb(r, g, b)`, or a CSS custom property holding one; null otherwise. */
export function parseColor(color: string): [number, number, number] | null {
  let value = color.trim();
  const variable = /^var\(\s*(--[\w-]+)\s*(?:,[^)]*)?\)$/.exec(value);
  if (variable && typeof document !== 'undefined') {
    value = getComputedStyle(document.documentElement)
      .getPropertyValue(variable[1])
      .trim();
  }
  let match = /^#([0-9a-f]{3})$/i.exec(value);
  if (match) {
    return [0, 1, 2].map(i => parseInt(match![1][i] + match![1][i], 16)) as [
      number,
      number,
      number
    ];
  }
  match = /^#([0-9a-f]{6})(?:[0-9a-f]{2})?$/i.exec(value);
  if (match) {
    return [0, 2, 4].map(i => parseInt(match![1].slice(i, i + 2), 16)) as [
      number,
      number,
      number
    ];
  }
  match = /^rgba?\(\s*(\d+)[\s,]+(\d+)[\s,]+(\d+)/i.exec(value);
  if (match) {
    return [Number(match[1]), Number(match[2]), Number(match[3])];
  }
  return null;
}
