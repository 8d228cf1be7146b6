import { describe, expect, it } from 'vitest';
import { html, trustedHtml } from '../../src/dashboard/views/html.js';
import { dailyChart } from '../../src/dashboard/views/team-pages.js';

describe('the html template', () => {
  it('escapes every interpolated value unless it is already HTML', () => {
    const name = `<img src=x onerror="alert('x')">&`;
    expect(html`<p title="${name}">${name}</p>`.value).toBe(
      '<p title="&lt;img src=x onerror=&quot;alert(&#39;x&#39;)&quot;&gt;&amp;">&lt;img src=x onerror=&quot;alert(&#39;x&#39;)&quot;&gt;&amp;</p>',
    );
    expect(html`<ul>${['<a>', html`<li>ok</li>`]}</ul>`.value).toBe('<ul>&lt;a&gt;<li>ok</li></ul>');
    expect(html`${null}${undefined}${false}${0}`.value).toBe('0');
    expect(html`${trustedHtml('<br>')}`.value).toBe('<br>');
  });

  it('draws the daily chart with a bar per day so far, scaled to the busiest day', () => {
    const svg = dailyChart(
      [
        { date: '2027-03-01', jobsCreated: 4 },
        { date: '2027-03-02', jobsCreated: 0 },
        { date: '2027-03-03', jobsCreated: 2 },
      ],
      31,
    ).value;
    expect(svg.match(/<rect /g)).toHaveLength(3);
    expect(svg).toContain('<title>2027-03-01: 4 jobs</title>');
    expect(svg).toContain('aria-label="Jobs created per day this month: 6 in 3 days, at most 4 in a day"');
    const heights = [...svg.matchAll(/height="(\d+)"><title>/g)].map((m) => Number(m[1]));
    expect(heights[0]).toBe(2 * heights[2]!);
    expect(heights[1]).toBe(0);
  });
});
