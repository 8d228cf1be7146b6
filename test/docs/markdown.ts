import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** README.md and every Markdown file under docs/, as paths from the repository root. */
export function docFiles(): string[] {
  const walk = (dir: string): string[] =>
    readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((entry) =>
      entry.isDirectory() ? walk(join(dir, entry.name)) : entry.name.endsWith('.md') ? [join(dir, entry.name)] : [],
    );
  return ['README.md', ...walk('docs').sort()].map((path) => relative(ROOT, join(ROOT, path)));
}

export const read = (path: string): string => readFileSync(join(ROOT, path), 'utf8');

export interface CodeBlock {
  /** The fence's info string: `sh run`, `json`, `js receiver` … */
  info: string;
  code: string;
  /** 1-based line of the opening fence. */
  line: number;
}

export function codeBlocks(markdown: string): CodeBlock[] {
  const blocks: CodeBlock[] = [];
  const lines = markdown.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const open = lines[i]!.match(/^```(.*)$/);
    if (!open) continue;
    const start = i;
    const body: string[] = [];
    for (i++; i < lines.length && lines[i] !== '```'; i++) body.push(lines[i]!);
    blocks.push({ info: open[1]!.trim(), code: body.join('\n'), line: start + 1 });
  }
  return blocks;
}

/** GitHub's anchor for a heading's text. */
export function anchorOf(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}_\- ]/gu, '')
    .replace(/ /g, '-');
}

/** The anchors of a file's headings (outside code blocks). */
export function anchors(markdown: string): Set<string> {
  const found = new Set<string>();
  let fence = false;
  for (const line of markdown.split('\n')) {
    if (line.startsWith('```')) fence = !fence;
    const heading = !fence && line.match(/^#{1,6} (.*)$/);
    if (heading) found.add(anchorOf(heading[1]!));
  }
  return found;
}

/** The first column's cells (between backticks) of every row of the table that follows `header`. */
export function tableColumn(markdown: string, header: RegExp): string[][] {
  const lines = markdown.split('\n');
  const start = lines.findIndex((line) => header.test(line));
  if (start === -1) throw new Error(`no table with header ${header}`);
  const rows: string[][] = [];
  for (let i = start + 2; i < lines.length && lines[i]!.startsWith('|'); i++) {
    rows.push(lines[i]!.slice(1, -1).split(' | ').map((cell) => cell.trim()));
  }
  return rows;
}
