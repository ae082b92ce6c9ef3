import { inkOn, parseColor } from '../i18n';

/** WCAG contrast ratio of two sRGB colours. */
function contrast(a: string, b: string): number {
  const lum = (color: string) => {
    const [r, g, b] = parseColor(color)!.map(channel => {
      const c = channel / 255;
      return c <= 0.03928 ? c / 12.92 : Math.pow((c + 0.055) / 1.055, 2.4);
    });
    return 0.2126 * r + 0.7152 * g + 0.0722 * b;
  };
  const [high, low] = [lum(a), lum(b)].sort((x, y) => y - x);
  return (high + 0.05) / (low + 0.05);
}

describe('inkOn', () => {
  // The server's agent palette (services/agent_identity.py) and light colours people's badges get.
  const colours = [
    '#7b1fa2',
    '#00897b',
    '#e65100',
    '#1565c0',
    '#c2185b',
    '#2e7d32',
    '#6d4c41',
    '#5e35b1',
    '#ffeb3b',
    '#8bc34a',
    '#03a9f4',
    'rgb(255, 152, 0)'
  ];
  it.each(colours)('reads at WCAG AA (4.5:1) on %s', colour => {
    expect(contrast(inkOn(colour), colour)).toBeGreaterThanOrEqual(4.5);
  });

  it('leaves colours it cannot read to the theme', () => {
    expect(inkOn('papayawhip')).toBe('var(--jp-ui-inverse-font-color1)');
  });
});
