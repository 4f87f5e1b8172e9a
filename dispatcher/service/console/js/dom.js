// DOM and formatting helpers. Text always goes in as text (never as HTML), so nothing the
// service returns can run as markup.

export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) {
      continue;
    }
    if (k === 'class') {
      el.className = v;
    } else if (k === 'text') {
      el.textContent = v;
    } else if (k.startsWith('on') && typeof v === 'function') {
      el.addEventListener(k.slice(2), v);
    } else if (k === 'dataset') {
      Object.assign(el.dataset, v);
    } else {
      el.setAttribute(k, v === true ? '' : String(v));
    }
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === undefined || c === null || c === false) {
      continue;
    }
    if (Array.isArray(c)) {
      append(el, c);
    } else {
      el.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
  }
}

export function clear(el) {
  while (el.firstChild) {
    el.removeChild(el.firstChild);
  }
  return el;
}

const numberFormat = new Intl.NumberFormat('en-US');
export function num(n) {
  return typeof n === 'number' ? numberFormat.format(n) : '–';
}

export function rate(n) {
  if (!Number.isFinite(n)) {
    return '–';
  }
  return n >= 100 ? numberFormat.format(Math.round(n)) : n.toFixed(n >= 10 ? 1 : 2);
}

// "2026-12-01 10:00:05" in the browser's zone; '–' for 0 or nothing.
export function time(ms) {
  if (!ms) {
    return '–';
  }
  const d = new Date(ms);
  const p = (x) => String(x).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ` +
    `${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}

// "3 s", "4 min 05 s", "2 h 10 min".
export function duration(ms) {
  if (ms <= 0) {
    return 'now';
  }
  const s = Math.ceil(ms / 1000);
  if (s < 60) {
    return `${s} s`;
  }
  if (s < 3600) {
    return `${Math.floor(s / 60)} min ${String(s % 60).padStart(2, '0')} s`;
  }
  if (s < 86400) {
    return `${Math.floor(s / 3600)} h ${String(Math.floor((s % 3600) / 60)).padStart(2, '0')} min`;
  }
  return `${Math.floor(s / 86400)} d ${Math.floor((s % 86400) / 3600)} h`;
}

export function badge(state) {
  return h('span', { class: `badge state-${state}`, text: state });
}

// A fill bar for `value` of `max` (0..1 clamped), with the numbers as its label.
export function fillBar(value, max, label) {
  const frac = max > 0 ? Math.max(0, Math.min(1, value / max)) : 0;
  const bar = h('span', { class: 'fill-inner' });
  bar.style.width = `${(frac * 100).toFixed(1)}%`;
  const level = frac < 0.15 ? 'low' : frac < 0.5 ? 'mid' : 'high';
  return h('span', {
    class: `fill fill-${level}`, role: 'meter', 'aria-valuemin': 0, 'aria-valuemax': max,
    'aria-valuenow': value, 'aria-label': label,
  }, h('span', { class: 'fill-track' }, bar), h('span', { class: 'fill-text', text: label }));
}

let toastTimer = 0;
export function toast(message, kind = 'info') {
  const el = document.getElementById('toast');
  el.textContent = message;
  el.className = `toast show toast-${kind}`;
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => { el.className = 'toast'; }, 4000);
}

// An error box for a failed call, with the API's message.
export function errorBox(e) {
  return h('div', { class: 'error-box', role: 'alert' },
    h('strong', { text: e.status ? `${e.status} ${e.body.error || ''}` : 'Error' }),
    ' ', e.message || String(e));
}
