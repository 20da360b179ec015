import test from 'node:test';
import assert from 'node:assert/strict';
import { wrap } from './fake-dom.js';
import { renderMarkdown, inline } from '../web/md.js';

test('headings, lists, code fences and paragraphs become elements', () => {
  const root = wrap(renderMarkdown('# Title\n\nSome **bold** and `code`.\n\n- one\n- two\n\n```rust\nfn main() {}\n```'));
  assert.equal(root.all('h3')[0].textContent, 'Title');
  assert.equal(root.all('strong')[0].textContent, 'bold');
  assert.equal(root.all('code')[0].textContent, 'code');
  assert.deepEqual(root.all('li').map((l) => l.textContent), ['one', 'two']);
  const pre = root.all('pre')[0];
  assert.equal(pre.all('code')[0].textContent, 'fn main() {}');
  assert.equal(pre.all('code')[0].dataset.lang, 'rust');
});

test('raw HTML stays text, and only safe links are links', () => {
  const root = wrap(renderMarkdown('<script>alert(1)</script> [x](javascript:alert(1)) [ok](https://example.com)'));
  assert.equal(root.all('script').length, 0);
  assert.ok(root.textContent.includes('<script>alert(1)</script>'));
  const links = root.all('a');
  assert.equal(links.length, 1);
  assert.equal(links[0].getAttribute('href'), 'https://example.com');
  assert.equal(links[0].getAttribute('rel'), 'noopener noreferrer');
  assert.ok(root.textContent.includes('[x](javascript:alert(1))'));
});

test('ordered lists keep their start, quotes nest, rules break', () => {
  const root = wrap(renderMarkdown('3. three\n4. four\n\n> quoted *text*\n\n---'));
  assert.equal(root.all('ol')[0].start, 3);
  assert.equal(root.all('blockquote')[0].all('em')[0].textContent, 'text');
  assert.equal(root.all('hr').length, 1);
});

test('inline spans: underscores inside words are not emphasis', () => {
  const nodes = inline('snake_case_name and _real_ emphasis');
  const em = nodes.filter((n) => typeof n !== 'string');
  assert.equal(em.length, 1);
  assert.equal(em[0].textContent, 'real');
});
