// A small Markdown renderer that builds DOM nodes directly. It understands fenced code,
// headings, lists, block quotes, rules, paragraphs, inline code, bold, italic and
// links (http, https and mailto only). Raw HTML in the text stays text: there is no
// path from the agent's words to innerHTML, so `<script>` or `<img onerror>` shows up
// as the characters it is.

import { h } from './dom.js';

const SAFE_URL = /^(https?:\/\/|mailto:)/i;

export function renderMarkdown(text) {
  const out = document.createDocumentFragment();
  const lines = String(text).replace(/\r\n?/g, '\n').split('\n');
  let i = 0;
  let para = [];
  const flush = () => {
    if (para.length) out.append(h('p', inline(para.join('\n'))));
    para = [];
  };
  while (i < lines.length) {
    const line = lines[i];
    const fence = /^\s*(```+|~~~+)\s*([\w+.#-]*)/.exec(line);
    if (fence) {
      flush();
      const body = [];
      i++;
      while (i < lines.length && !lines[i].trim().startsWith(fence[1])) body.push(lines[i++]);
      i++;
      const code = h('code', body.join('\n'));
      if (fence[2]) code.dataset.lang = fence[2];
      out.append(h('pre', fence[2] ? h('span.lang', fence[2]) : null, code));
      continue;
    }
    const head = /^(#{1,6})\s+(.*)$/.exec(line);
    if (head) {
      flush();
      out.append(h(`h${Math.min(6, head[1].length + 2)}`, inline(head[2])));
      i++;
      continue;
    }
    if (/^\s*([-*_])(\s*\1){2,}\s*$/.test(line)) {
      flush();
      out.append(h('hr'));
      i++;
      continue;
    }
    if (/^\s*>/.test(line)) {
      flush();
      const body = [];
      while (i < lines.length && /^\s*>/.test(lines[i])) body.push(lines[i++].replace(/^\s*>\s?/, ''));
      out.append(h('blockquote', renderMarkdown(body.join('\n'))));
      continue;
    }
    const item = /^(\s*)([-*+]|\d+[.)])\s+(.*)$/.exec(line);
    if (item) {
      flush();
      const ordered = /\d/.test(item[2]);
      const list = h(ordered ? 'ol' : 'ul');
      if (ordered && parseInt(item[2], 10) !== 1) list.start = parseInt(item[2], 10);
      while (i < lines.length) {
        const m = /^(\s*)([-*+]|\d+[.)])\s+(.*)$/.exec(lines[i]);
        if (m && /\d/.test(m[2]) === ordered) {
          const nested = m[1].length >= 2;
          const li = h('li', inline(m[3]));
          if (nested) li.classList.add('nested');
          list.append(li);
          i++;
        } else if (lines[i].trim() && /^\s{2,}/.test(lines[i]) && list.lastChild) {
          list.lastChild.append('\n', inline(lines[i].trim()));
          i++;
        } else break;
      }
      out.append(list);
      continue;
    }
    if (!line.trim()) {
      flush();
      i++;
      continue;
    }
    para.push(line);
    i++;
  }
  flush();
  return out;
}

/** Inline spans: `code`, **bold**, *italic* / _italic_, [text](url), ![alt](url). */
export function inline(text) {
  const nodes = [];
  const re = /(`+)([^`]|[^`][\s\S]*?[^`])\1(?!`)|\*\*([^*\n]+)\*\*|__([^_\n]+)__|\*([^*\s][^*\n]*)\*|(?<![\w])_([^_\s][^_\n]*)_(?![\w])|(!?)\[([^\]\n]*)\]\(([^)\s]+)\)/g;
  let last = 0;
  let m;
  while ((m = re.exec(text))) {
    if (m.index > last) nodes.push(text.slice(last, m.index));
    if (m[1]) nodes.push(h('code', m[2]));
    else if (m[3] || m[4]) nodes.push(h('strong', inline(m[3] || m[4])));
    else if (m[5] || m[6]) nodes.push(h('em', inline(m[5] || m[6])));
    else {
      const label = m[8] || m[9];
      const url = m[9];
      if (SAFE_URL.test(url)) {
        nodes.push(h('a', { href: url, target: '_blank', rel: 'noopener noreferrer' }, m[7] ? `🖼 ${label}` : label));
      } else nodes.push(m[0]);
    }
    last = re.lastIndex;
  }
  if (last < text.length) nodes.push(text.slice(last));
  return nodes;
}
