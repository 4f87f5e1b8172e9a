// Destinations: the destinations with work, a page at a time from the service (GET
// /v1/destinations with limit and cursor: a page costs the service the same however many there
// are), in its order (by key, or the oldest deferral first) and filtered by platform there; the
// rows of a page sortable and filtered in the browser. Each with its budget and remaining units
// as a fill bar, why its head waits and until when (a countdown), its head's priority, when its
// backlog would be done (drain_eta_ms), and Enable for a disabled one.
// One an operator paused shows a "paused" badge (for the admin a link to its pause on #/pauses)
// and waits until resumed.

import { api, query } from './api.js';
import { clear, duration, errorBox, fillBar, h, num, toast } from './dom.js';

const PAGE = 50;
const REFRESH_MS = 5000;

const COLUMNS = [
  { key: 'platform', label: 'Platform', value: (d) => d.platform },
  { key: 'tenant', label: 'Tenant', value: (d) => d.tenant, admin: true },
  { key: 'destination', label: 'Destination', value: (d) => d.destination },
  { key: 'budget', label: 'Budget', value: (d) => d.budget.name },
  { key: 'remaining', label: 'Remaining', value: (d) => fraction(d), num: true },
  { key: 'priority', label: 'Priority', value: (d) => d.head_priority || '' },
  { key: 'deferral', label: 'Waits on', value: (d) => d.deferral || '' },
  { key: 'next', label: 'Next eligible', value: (d) => d.next_eligible_ms || 0, num: true },
  { key: 'eta', label: 'Done in', value: (d) => d.drain_eta_ms ?? Infinity, num: true },
  { key: 'queued', label: 'Queued', value: (d) => d.queued, num: true },
  { key: 'deferred', label: 'Deferred', value: (d) => d.deferred, num: true },
  { key: 'in_flight', label: 'In flight', value: (d) => d.in_flight, num: true },
  { key: 'status', label: 'Status', value: (d) => (d.disabled ? 0 : 1) },
];

function fraction(d) {
  const cap = Math.max(1, d.budget.burst || d.budget.limit || 1);
  return d.remaining / cap;
}

function budgetText(b) {
  const per = b.scale_ms % 1000 === 0 ? `${b.scale_ms / 1000} s` : `${b.scale_ms} ms`;
  return `${b.name} · ${num(b.limit)}/${per}${b.learned ? ' (learned)' : ''}`;
}

export function mount(root, session, params) {
  const state = {
    list: [], sort: params.get('sort') || 'next', dir: params.get('dir') === 'desc' ? -1 : 1,
    filter: '', loaded: false, error: null,
    // The service's pages: the cursor each was read from (the first: ''), and the next one's.
    cursors: [''], next: null, total: null,
  };
  const columns = COLUMNS.filter((c) => !c.admin || session.admin);
  const filter = h('input', { type: 'search', id: 'dest-filter', placeholder: 'Filter: platform, destination, reason…',
    'aria-label': 'Filter destinations' });
  const platform = h('select', { id: 'dest-platform', 'aria-label': 'Platform' },
    ['', ...session.platforms].map((p) => h('option', { value: p, text: p || 'all platforms' })));
  const order = h('select', { id: 'dest-order', 'aria-label': 'Order' },
    [['key', 'in key order'], ['oldest_deferral', 'oldest deferral first']].map(
      ([value, text]) => h('option', { value, text })));
  const summary = h('span', { class: 'muted small', id: 'dest-summary' });
  const status = h('div', {});
  const head = h('tr', {});
  const body = h('tbody', {});
  const pager = h('div', { class: 'pager' });
  root.append(
    h('div', { class: 'page-head' }, h('h1', { text: 'Destinations' }), summary),
    h('div', { class: 'toolbar' }, filter, platform, order),
    status,
    h('div', { class: 'table-wrap' }, h('table', { class: 'table', id: 'destinations' },
      h('thead', {}, head), body)),
    pager);

  const renderHead = () => {
    clear(head);
    for (const c of columns) {
      const sorted = state.sort === c.key;
      head.append(h('th', {
        scope: 'col', class: c.num ? 'num' : '',
        'aria-sort': sorted ? (state.dir > 0 ? 'ascending' : 'descending') : 'none',
      }, h('button', {
        type: 'button', class: 'sort',
        onclick: () => {
          state.dir = sorted ? -state.dir : 1;
          state.sort = c.key;
          render();
        },
      }, c.label, h('span', { class: 'sort-mark', 'aria-hidden': 'true', text: sorted ? (state.dir > 0 ? '▲' : '▼') : '' }))));
    }
  };

  const visible = () => {
    const f = state.filter.toLowerCase();
    const rows = state.list.filter((d) => !f ||
      [d.platform, d.tenant, d.destination, d.key, d.deferral || '', d.disabled_reason || '', d.budget.name,
        d.paused ? 'paused' : '']
        .some((s) => String(s).toLowerCase().includes(f)));
    const col = columns.find((c) => c.key === state.sort) || columns[0];
    rows.sort((a, b) => {
      const x = col.value(a);
      const y = col.value(b);
      return (x < y ? -1 : x > y ? 1 : 0) * state.dir;
    });
    return rows;
  };

  const cell = (c, d) => {
    switch (c.key) {
      case 'destination':
        return h('td', { class: 'mono wrap', title: d.key }, d.destination);
      case 'budget':
        return h('td', { class: 'small' }, budgetText(d.budget),
          d.adaptive ? h('div', { class: 'muted', text: `adaptive: ${num(d.adaptive.limit)}/${d.adaptive.scale_ms} ms${d.adaptive.probing ? ', probing' : ''}` }) : null);
      case 'remaining': {
        const cap = Math.max(1, d.budget.burst || d.budget.limit);
        return h('td', {}, fillBar(d.remaining, cap, `${num(d.remaining)} of ${num(cap)}`));
      }
      case 'deferral': {
        // A pause's own reason is its badge; any other is shown beside it.
        const reason = d.deferral && !(d.paused && /^paused(:|$)/.test(d.deferral))
          ? h('span', { class: 'tag warn', text: d.deferral }) : null;
        return h('td', { class: 'reason' }, d.paused ? pausedBadge(d) : null, d.paused && reason ? ' ' : null,
          reason, !d.paused && !reason ? h('span', { class: 'muted', text: '–' }) : null);
      }
      case 'eta':
        // When its backlog would be done at the pace seen (docs/api.md, "Drain ETA"); none while
        // held or before any pace is known.
        return h('td', { class: 'num', title: 'When its backlog would be done at the pace seen' },
          d.drain_eta_ms == null ? '–' : duration(d.drain_eta_ms - Date.now()));
      case 'next':
        return h('td', { class: 'num countdown', dataset: { until: d.paused ? 0 : d.next_eligible_ms || 0 } }, countdown(d));
      case 'status':
        if (!d.disabled) {
          return h('td', {}, h('span', { class: 'tag ok', text: 'enabled' }));
        }
        return h('td', {}, h('span', { class: 'tag bad', text: `disabled: ${d.disabled_reason || ''}` }), ' ',
          h('button', { type: 'button', class: 'small-btn', onclick: () => enable(d) }, 'Enable'));
      default:
        return h('td', { class: c.num ? 'num' : '' }, c.num ? num(c.value(d)) : c.value(d));
    }
  };

  // The admin follows it to its pause (and Resume there); a tenant key cannot see pauses.
  const pausedBadge = (d) => (session.admin && d.pause_id
    ? h('a', { class: 'tag paused', href: `#/pauses?id=${encodeURIComponent(d.pause_id)}`,
      title: `Paused by ${d.pause_id}: open it on the Pauses page`, text: 'paused' })
    : h('span', { class: 'tag paused', title: 'Paused by an operator', text: 'paused' }));

  const countdown = (d) => {
    if (!d.has_head) {
      return '–';
    }
    if (d.paused) {
      return 'on resume';
    }
    return duration((d.next_eligible_ms || 0) - Date.now());
  };

  const enable = async (d) => {
    try {
      await api('POST', '/v1/destinations/enable', { key: d.key });
      toast(`Enabled ${d.destination}`, 'ok');
      load();
    } catch (e) {
      toast(`Enable failed: ${e.message}`, 'bad');
    }
  };

  const render = () => {
    renderHead();
    clear(status);
    if (state.error) {
      status.append(errorBox(state.error));
    }
    const rows = visible();
    clear(body);
    for (const d of rows) {
      body.append(h('tr', { dataset: { key: d.key }, class: d.disabled ? 'row-bad' : d.paused ? 'row-paused' : d.deferral ? 'row-warn' : '' },
        columns.map((c) => cell(c, d))));
    }
    if (state.loaded && rows.length === 0) {
      body.append(h('tr', {}, h('td', { colspan: columns.length, class: 'muted empty', text: 'No destination with work.' })));
    }
    const throttled = state.list.filter((d) => d.deferral).length;
    const disabled = state.list.filter((d) => d.disabled).length;
    const paused = state.list.filter((d) => d.paused).length;
    const page = state.cursors.length;
    summary.textContent = `${state.total === null ? '' : `${num(state.total)} with work · `}` +
      `this page: ${num(state.list.length)} · ${num(throttled)} waiting · ${num(paused)} paused · ${num(disabled)} disabled`;
    clear(pager).append(
      h('button', { type: 'button', disabled: page === 1, onclick: () => { state.cursors.pop(); load(); } }, '‹ Previous'),
      h('span', { class: 'muted small', text: `page ${num(page)} · ${num(rows.length)} rows` }),
      h('button', { type: 'button', disabled: !state.next, onclick: () => { state.cursors.push(state.next); load(); } }, 'Next ›'));
  };

  let stopped = false;
  const load = async () => {
    try {
      const cursor = state.cursors[state.cursors.length - 1];
      const answer = await api('GET', `/v1/destinations${query({
        platform: platform.value, sort: order.value, limit: PAGE, cursor,
      })}`);
      state.list = answer.destinations || [];
      state.next = answer.next_cursor || null;
      state.error = null;
      // The count of all: /v1/stats answers it at no cost (the service keeps it).
      const stats = await api('GET', '/v1/stats');
      state.total = typeof stats.destinations === 'number' ? stats.destinations : null;
    } catch (e) {
      if (e.status === 400 && e.body.error === 'invalid_cursor' && state.cursors.length > 1) {
        state.cursors = [''];  // a cursor from before the service restarted: from the start
        return load();
      }
      state.error = e;
    }
    state.loaded = true;
    if (!stopped) {
      render();
    }
  };

  filter.addEventListener('input', () => { state.filter = filter.value; render(); });
  platform.addEventListener('change', () => { state.cursors = ['']; load(); });
  order.addEventListener('change', () => { state.cursors = ['']; load(); });
  render();
  load();
  const refresh = setInterval(load, REFRESH_MS);
  const tick = setInterval(() => {
    for (const td of body.querySelectorAll('td.countdown')) {
      const until = Number(td.dataset.until);
      if (until) {
        td.textContent = duration(until - Date.now());
      }
    }
  }, 1000);
  return () => {
    stopped = true;
    clearInterval(refresh);
    clearInterval(tick);
  };
}
