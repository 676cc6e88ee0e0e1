import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * The README and docs/ link to each other by relative paths and #anchors: each must lead somewhere, as
 * GitHub renders them. docs/development.md says this test exists.
 */
const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

function markdownUnder(dir: string): string[] {
  return readdirSync(path.join(ROOT, dir), { withFileTypes: true }).flatMap((entry) => {
    const relative = path.join(dir, entry.name);
    if (entry.isDirectory()) return markdownUnder(relative);
    return entry.name.endsWith('.md') ? [relative] : [];
  });
}

const DOCS = markdownUnder('docs');
const PAGES = ['README.md', ...DOCS, 'apps/bench/results/HISTORY.md'];

/** The text outside fenced code blocks, with each code span made plain text (a link in one is no link). */
function prose(markdown: string): string {
  return markdown
    .replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '')
    .replace(/(`+)(?!`)([\s\S]*?[^`])\1(?!`)/g, (_, _ticks, code: string) => code.replace(/[[\]()]/g, ' '));
}

/** A heading's anchor as GitHub makes it: lower case, punctuation dropped, spaces to hyphens. */
function githubSlug(heading: string): string {
  const text = heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/[`*]/g, '')
    .trim();
  return text
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
    .replace(/ /g, '-');
}

const anchorsByFile = new Map<string, Set<string>>();
function anchorsOf(file: string): Set<string> {
  let anchors = anchorsByFile.get(file);
  if (anchors) return anchors;
  anchors = new Set();
  const seen = new Map<string, number>();
  const markdown = readFileSync(file, 'utf8').replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '');
  for (const [, heading = ''] of markdown.matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const slug = githubSlug(heading);
    const times = seen.get(slug) ?? 0;
    seen.set(slug, times + 1);
    anchors.add(times ? `${slug}-${times}` : slug);
  }
  anchorsByFile.set(file, anchors);
  return anchors;
}

/** Every relative link and image of a page: its target as written. */
function linksOf(page: string): string[] {
  const text = prose(readFileSync(path.join(ROOT, page), 'utf8'));
  return [...text.matchAll(/!?\[(?:[^[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)]
    .map((m) => m[1] as string)
    .filter((target) => !/^[a-z][a-z0-9+.-]*:/i.test(target));
}

/** Why `target`, written in `page`, leads nowhere; undefined when it leads somewhere. */
function brokenLink(page: string, target: string): string | undefined {
  const [pathPart = '', anchor] = target.split('#', 2) as [string, string | undefined];
  const file = pathPart ? path.resolve(ROOT, path.dirname(page), decodeURI(pathPart)) : path.join(ROOT, page);
  if (!file.startsWith(ROOT)) return 'outside the repository';
  if (!existsSync(file)) return 'no such file';
  if (anchor === undefined) return undefined;
  if (statSync(file).isDirectory() || !file.endsWith('.md'))
    return 'an anchor on something that is not a page';
  return anchorsOf(file).has(anchor) ? undefined : `no heading makes #${anchor}`;
}

describe('the documentation', () => {
  it('makes anchors as GitHub does', () => {
    expect(githubSlug('Admin area (the dashboard)')).toBe('admin-area-the-dashboard');
    expect(githubSlug('At scale: `npm run bench:scale`')).toBe('at-scale-npm-run-benchscale');
    expect(githubSlug("Analyze and predict on the deal's timestamps")).toBe(
      'analyze-and-predict-on-the-deals-timestamps',
    );
    expect(githubSlug('failure_count and deactivation')).toBe('failure_count-and-deactivation');
    expect(githubSlug('GET /usage')).toBe('get-usage');
  });

  it.each(PAGES)('%s: every relative link and #anchor leads somewhere', (page) => {
    const broken = linksOf(page).flatMap((target) => {
      const why = brokenLink(page, target);
      return why ? [`${target}: ${why}`] : [];
    });
    expect(broken).toEqual([]);
  });

  it('links every page under docs/ from the README', () => {
    const linked = new Set(
      linksOf('README.md').map((target) => path.normalize(decodeURI(target.split('#')[0] ?? ''))),
    );
    expect(DOCS.filter((page) => !linked.has(page))).toEqual([]);
  });
});
