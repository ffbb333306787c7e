#!/usr/bin/env node
// Turns the figures `scripts/bench.sh` collected (JSON lines, one per figure: {group, name, value, unit,
// baseline, baselineValue, ratio, target}) into `figures.json` (the same, as one array) and `figures.svg`:
// one horizontal bar per figure, its length the ratio to its baseline on a log scale, a line at 1.0x (the
// baseline) and a tick at the figure's target when it has one. No dependencies.
//
// Usage: node scripts/bench-chart.mjs <figures.jsonl> <out dir>
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

const [input, outDir] = process.argv.slice(2);
if (!input || !outDir) {
  process.stderr.write('usage: node scripts/bench-chart.mjs <figures.jsonl> <out dir>\n');
  process.exit(2);
}
const figures = readFileSync(input, 'utf8')
  .split('\n')
  .filter((l) => l.trim() !== '')
  .map((l) => JSON.parse(l));
writeFileSync(path.join(outDir, 'figures.json'), `${JSON.stringify(figures, null, 2)}\n`);

const esc = (s) => String(s).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
const fmt = (v) => (Math.abs(v) >= 100 ? v.toFixed(0) : Math.abs(v) >= 10 ? v.toFixed(1) : v.toFixed(2));

// Layout: a label column, then the bars on log10(ratio) from 1/4x to the largest ratio (at least 4x).
const ROW = 22;
const LABEL = 430;
const BARS = 420;
const NOTE = 330;
const width = LABEL + BARS + NOTE;
const lo = Math.log10(0.25);
const hi = Math.log10(Math.max(4, ...figures.map((f) => f.ratio * 1.1), ...figures.map((f) => (f.target ?? 0) * 1.1)));
const x = (ratio) => LABEL + ((Math.log10(Math.max(ratio, 0.25)) - lo) / (hi - lo)) * BARS;

const rows = [];
let y = 40;
let group = null;
for (const f of figures) {
  if (f.group !== group) {
    group = f.group;
    y += 8;
    rows.push(`<text x="8" y="${y + 14}" font-weight="bold">${esc(group)}</text>`);
    y += ROW;
  }
  const over = f.target != null && f.ratio > f.target;
  const colour = f.target == null ? '#7a8fa6' : over ? '#c0392b' : '#2e8b57';
  const x1 = x(Math.min(f.ratio, 1));
  const x2 = x(Math.max(f.ratio, 1));
  rows.push(`<text x="16" y="${y + 15}">${esc(f.name)}</text>`);
  rows.push(`<rect x="${x1.toFixed(1)}" y="${y + 4}" width="${Math.max(1, x2 - x1).toFixed(1)}" height="${ROW - 8}" fill="${colour}"/>`);
  if (f.target != null) {
    const tx = x(f.target).toFixed(1);
    rows.push(`<line x1="${tx}" x2="${tx}" y1="${y + 1}" y2="${y + ROW - 1}" stroke="#000" stroke-dasharray="2,2"/>`);
  }
  const target = f.target != null ? `, target ${fmt(f.target)}x` : '';
  const note = `${fmt(f.ratio)}x: ${fmt(f.value)} ${f.unit} vs ${esc(f.baseline)} ${fmt(f.baselineValue)} ${f.unit}${target}`;
  rows.push(`<text x="${LABEL + BARS + 10}" y="${y + 15}">${note}</text>`);
  y += ROW;
}
const height = y + 30;
const one = x(1).toFixed(1);
const ticks = [0.25, 0.5, 1, 2, 4, 8, 16, 32, 64].filter((t) => Math.log10(t) <= hi);
const axis = ticks
  .map((t) => `<text x="${x(t).toFixed(1)}" y="${height - 10}" text-anchor="middle" fill="#555">${t}x</text>`)
  .join('\n');
const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" font-family="sans-serif" font-size="12">
<rect width="100%" height="100%" fill="#fff"/>
<text x="8" y="22" font-size="15" font-weight="bold">baton benchmarks: each figure as a ratio to its baseline, measured in the same run (log scale)</text>
<text x="${LABEL}" y="36" fill="#555">bars from 1.0x (the baseline) to the ratio; dashed: the target; green under it, red over, grey: no target</text>
${rows.join('\n')}
<line x1="${one}" x2="${one}" y1="40" y2="${height - 24}" stroke="#333"/>
${axis}
</svg>
`;
writeFileSync(path.join(outDir, 'figures.svg'), svg);
process.stderr.write(`wrote ${figures.length} figures to ${path.join(outDir, 'figures.json')} and figures.svg\n`);
