// Overview: delivered / accepted / deferred / dead per second, 429s by platform, and a live
// chart of the last 10 minutes, from GET /v1/stats sampled every 5 s while the console is open.

import { api, platformsOf } from './api.js';
import { clear, errorBox, h, num, rate } from './dom.js';

const PERIOD_MS = 5000;
const WINDOW_MS = 10 * 60 * 1000;
const SERIES = [
  { key: 'delivered', label: 'Delivered', color: '#16a34a' },
  { key: 'accepted', label: 'Accepted', color: '#2563eb' },
  { key: 'deferred', label: 'Deferred', color: '#d97706' },
  { key: 'dead', label: 'Dead', color: '#dc2626' },
];

// Samples: {t, stats, p429: {platform: total}}; rates come from neighbouring samples.
const samples = [];
let timer = 0;
let lastError = null;
let listener = null;

async function sample(session) {
  try {
    const stats = await api('GET', '/v1/stats');
    // The admin's stats carry the 429s by platform (a scrape of /metrics grows with tenants).
    const p429 = session.admin ? stats.platform_429s_by_platform || null : null;
    samples.push({ t: Date.now(), stats, p429 });
    while (samples.length > 1 && samples[0].t < Date.now() - WINDOW_MS - PERIOD_MS) {
      samples.shift();
    }
    lastError = null;
  } catch (e) {
    lastError = e;
  }
  if (listener) {
    listener();
  }
}

export function startSampler(session) {
  stopSampler();
  samples.length = 0;
  sample(session);
  timer = setInterval(() => sample(session), PERIOD_MS);
}

export function stopSampler() {
  clearInterval(timer);
  timer = 0;
}

// Per-second rates between samples a and b (state counts and counters never go back, but a
// purge lowers a state's count: clamped at 0).
function rates(a, b) {
  const dt = (b.t - a.t) / 1000;
  const d = (k) => Math.max(0, (b.stats[k] || 0) - (a.stats[k] || 0)) / dt;
  return { delivered: d('delivered'), accepted: d('accepted'), deferred: d('deferrals'),
    dead: d('dead'), backlog: b.stats.backlog };
}

function card(label, value, unit, cls) {
  return h('div', { class: `card stat ${cls || ''}` },
    h('div', { class: 'stat-label', text: label }),
    h('div', { class: 'stat-value' }, value, unit ? h('span', { class: 'stat-unit', text: unit }) : null));
}

function drawChart(canvas, session) {
  const dpr = window.devicePixelRatio || 1;
  const w = canvas.clientWidth;
  const hgt = canvas.clientHeight;
  canvas.width = Math.round(w * dpr);
  canvas.height = Math.round(hgt * dpr);
  const g = canvas.getContext('2d');
  g.scale(dpr, dpr);
  g.clearRect(0, 0, w, hgt);
  const pad = { l: 44, r: 12, t: 10, b: 24 };
  const now = Date.now();
  const series = session.admin ? SERIES : [{ key: 'backlog', label: 'Backlog', color: '#2563eb' }];
  const points = [];
  for (let i = 1; i < samples.length; ++i) {
    points.push({ t: samples[i].t, r: rates(samples[i - 1], samples[i]) });
  }
  let max = 1;
  for (const p of points) {
    for (const s of series) {
      max = Math.max(max, p.r[s.key] || 0);
    }
  }
  const niceMax = niceCeil(max);
  // The axis spans what was sampled, from 1 minute up to the 10-minute window.
  const oldest = samples.length ? samples[0].t : now;
  const span = Math.min(WINDOW_MS, Math.max(60000, now - oldest));
  const x = (t) => pad.l + (w - pad.l - pad.r) * (1 - (now - t) / span);
  const y = (v) => pad.t + (hgt - pad.t - pad.b) * (1 - v / niceMax);
  g.font = '11px system-ui, sans-serif';
  g.strokeStyle = '#e5e7eb';
  g.fillStyle = '#6b7280';
  g.lineWidth = 1;
  for (let i = 0; i <= 4; ++i) {
    const v = (niceMax * i) / 4;
    g.beginPath();
    g.moveTo(pad.l, Math.round(y(v)) + 0.5);
    g.lineTo(w - pad.r, Math.round(y(v)) + 0.5);
    g.stroke();
    g.textAlign = 'right';
    g.fillText(rate(v), pad.l - 6, y(v) + 4);
  }
  g.textAlign = 'center';
  for (let i = 5; i >= 0; --i) {
    const ago = (span * i) / 5;
    const label = ago === 0 ? 'now' : ago >= 120000 ? `-${Math.round(ago / 60000)} min`
      : `-${Math.round(ago / 1000)} s`;
    g.fillText(label, x(now - ago), hgt - 6);
  }
  g.lineWidth = 2;
  for (const s of series) {
    g.strokeStyle = s.color;
    g.beginPath();
    points.forEach((p, i) => {
      const px = Math.max(pad.l, x(p.t));
      if (i === 0) {
        g.moveTo(px, y(p.r[s.key] || 0));
      } else {
        g.lineTo(px, y(p.r[s.key] || 0));
      }
    });
    g.stroke();
    const lastPoint = points[points.length - 1];
    if (lastPoint) {
      g.fillStyle = s.color;
      g.beginPath();
      g.arc(x(lastPoint.t), y(lastPoint.r[s.key] || 0), 3, 0, 2 * Math.PI);
      g.fill();
    }
  }
}

function niceCeil(v) {
  const p = 10 ** Math.floor(Math.log10(v));
  for (const m of [1, 2, 2.5, 5, 10]) {
    if (v <= m * p) {
      return m * p;
    }
  }
  return 10 * p;
}

export function mount(root, session) {
  const cards = h('div', { class: 'cards' });
  const p429 = h('div', { class: 'card' });
  const canvas = h('canvas', { class: 'chart', role: 'img',
    'aria-label': 'rates over the last 10 minutes' });
  const legend = h('div', { class: 'legend' },
    (session.admin ? SERIES : [{ label: 'Backlog', color: '#2563eb' }]).map((s) => {
      const sw = h('span', { class: 'swatch' });
      sw.style.background = s.color;
      return h('span', {}, sw, s.label);
    }));
  const status = h('div', {});
  root.append(
    h('div', { class: 'page-head' }, h('h1', { text: 'Overview' }),
      h('span', { class: 'muted small', text: 'sampled every 5 s; rates per second' })),
    status, cards,
    h('div', { class: 'grid-2' },
      h('section', { class: 'card' },
        h('h2', { text: session.admin ? 'Rates, up to the last 10 minutes' : 'Backlog, up to the last 10 minutes' }),
        canvas, legend),
      p429));

  const render = () => {
    clear(status);
    if (lastError) {
      status.append(errorBox(lastError));
    }
    const last = samples[samples.length - 1];
    const prev = samples[samples.length - 2];
    clear(cards);
    if (!last) {
      cards.append(h('p', { class: 'muted', text: 'Waiting for the first sample…' }));
    } else if (session.admin) {
      const r = prev ? rates(prev, last) : {};
      const s = last.stats;
      cards.append(
        card('Delivered', rate(r.delivered), '/s', 'ok'),
        card('Accepted', rate(r.accepted), '/s'),
        card('Deferred', rate(r.deferred), '/s', 'warn'),
        card('Dead', rate(r.dead), '/s', 'bad'),
        card('Queued now', num(s.queued)),
        card('Deferred now', num(s.deferred)),
        card('Dead now', num(s.dead)),
        card('Destinations', num(s.destinations)));
    } else {
      cards.append(card('Backlog', num(last.stats.backlog)),
        card('Destinations', num(last.stats.destinations)));
    }
    clear(p429).append(h('h2', { text: '429s by platform' }));
    if (!session.admin) {
      p429.append(h('p', { class: 'muted', text: 'Service-wide counts and 429s need the admin token.' }));
    } else if (last && last.p429) {
      const first = samples.find((x) => x.p429) || last;
      // The platforms this sample's answer names (profile platforms too), in its order.
      const rows = platformsOf(last.stats).map((p) => h('tr', {},
        h('th', { scope: 'row', text: p }),
        h('td', { class: 'num', text: num(last.p429[p] || 0) }),
        h('td', { class: 'num', text: num(Math.max(0, (last.p429[p] || 0) - (first.p429[p] || 0))) })));
      p429.append(h('table', { class: 'table compact' },
        h('thead', {}, h('tr', {}, h('th', { text: 'platform' }),
          h('th', { class: 'num', text: 'total' }), h('th', { class: 'num', text: 'last 10 min' }))),
        h('tbody', {}, rows)));
    }
    drawChart(canvas, session);
  };
  listener = render;
  render();
  const onResize = () => drawChart(canvas, session);
  window.addEventListener('resize', onResize);
  return () => {
    listener = null;
    window.removeEventListener('resize', onResize);
  };
}
