// Deliveries: GET /v1/deliveries with the filters (state, tenant, platform, destination,
// reason, created since/until), read page by page with the API's cursor as the list is
// scrolled, and drawn virtualised (only the rows in view are in the DOM), so 100k deliveries
// stay smooth. A row opens a drawer with the record, its attempts and their rate-limit headers,
// Replay and Cancel. "Replay matching" replays the filter as a job: dry-run count first, then a
// progress bar following GET /v1/jobs/{id}.

import { api, query } from './api.js';
import { badge, clear, errorBox, h, num, time, toast } from './dom.js';

const ROW_H = 36;
const FETCH = 500;
const MAX_ROWS = 100000;
const STATES = ['', 'queued', 'in_flight', 'deferred', 'delivered', 'dead', 'cancelled'];
const FIELDS = ['state', 'tenant', 'platform', 'destination', 'reason', 'since', 'until'];

// datetime-local value <-> RFC 3339 / Unix ms for the API.
function toApiTime(local) {
  if (!local) {
    return '';
  }
  const ms = new Date(local).getTime();
  return Number.isFinite(ms) ? String(ms) : '';
}

export function mount(root, session, params) {
  const filters = {};
  for (const f of FIELDS) {
    filters[f] = params.get(f) || '';
  }
  const rows = [];
  let cursor = null;
  let done = false;
  let loading = false;
  let generation = 0;
  let active = -1;
  let stopped = false;
  const timers = new Set();

  const input = (name, label, attrs) => h('label', { class: 'field' }, h('span', { text: label }),
    h('input', Object.assign({ name, id: `f-${name}`, value: filters[name] }, attrs)));
  const select = (name, label, options) => {
    const s = h('select', { name, id: `f-${name}` },
      options.map((o) => h('option', { value: o, text: o || 'any' })));
    s.value = filters[name];
    return h('label', { class: 'field' }, h('span', { text: label }), s);
  };
  const localValue = (v) => {
    if (!v) {
      return '';
    }
    const d = new Date(/^\d+$/.test(v) ? Number(v) : v);
    if (!Number.isFinite(d.getTime())) {
      return '';
    }
    return new Date(d.getTime() - d.getTimezoneOffset() * 60000).toISOString().slice(0, 16);
  };
  const form = h('form', { class: 'filters', id: 'delivery-filters' },
    select('state', 'State', STATES),
    session.admin ? input('tenant', 'Tenant', { type: 'text', autocomplete: 'off' }) : null,
    // A platform from the address the service does not name stays a choice (and selected).
    select('platform', 'Platform', ['', ...session.platforms,
      ...(filters.platform && !session.platforms.includes(filters.platform) ? [filters.platform] : [])]),
    input('destination', 'Destination', { type: 'text', autocomplete: 'off' }),
    input('reason', 'Reason (prefix)', { type: 'text', autocomplete: 'off', placeholder: 'http_4, budget:' }),
    input('since', 'Created since', { type: 'datetime-local', value: localValue(filters.since) }),
    input('until', 'Created before', { type: 'datetime-local', value: localValue(filters.until) }),
    h('div', { class: 'field actions' },
      h('button', { type: 'submit', class: 'primary', text: 'Apply' }),
      h('button', { type: 'button', id: 'bulk-replay', text: 'Replay matching…' })));
  const bulk = h('div', { id: 'bulk', class: 'bulk', hidden: true });
  const status = h('div', {});
  const count = h('span', { class: 'muted small', id: 'delivery-count' });
  const spacer = h('div', { class: 'vspacer' });
  const scroller = h('div', {
    class: 'vscroll', id: 'delivery-list', tabindex: 0, role: 'grid', 'aria-rowcount': 0,
    'aria-label': 'Deliveries; arrow keys move, Enter opens',
  }, spacer);
  const headRow = h('div', { class: 'vrow vhead', role: 'row' },
    ['ID', 'State', 'Tenant', 'Platform', 'Destination', 'Att.', 'Reason', 'Created'].map(
      (t) => h('span', { role: 'columnheader', text: t })));
  const drawer = h('aside', { class: 'drawer', id: 'drawer', hidden: true, role: 'dialog',
    'aria-labelledby': 'drawer-title' });
  root.append(
    h('div', { class: 'page-head' }, h('h1', { text: 'Deliveries' }), count),
    form, bulk, status,
    h('div', { class: 'vtable' }, headRow, scroller),
    drawer);

  const later = (fn, ms) => {
    const t = setTimeout(() => { timers.delete(t); if (!stopped) { fn(); } }, ms);
    timers.add(t);
  };

  const listQuery = (extra) => query(Object.assign({
    state: filters.state, tenant: filters.tenant, platform: filters.platform,
    destination: filters.destination, reason: filters.reason,
    since: toApiTime(filters.since), until: toApiTime(filters.until),
  }, extra));

  const fetchMore = async () => {
    if (loading || done || rows.length >= MAX_ROWS) {
      return;
    }
    loading = true;
    const gen = generation;
    try {
      const answer = await api('GET', `/v1/deliveries${listQuery({ limit: FETCH, cursor })}`);
      if (gen !== generation) {
        return;
      }
      rows.push(...(answer.deliveries || []));
      cursor = answer.next_cursor || null;
      done = !cursor;
      clear(status);
    } catch (e) {
      if (gen === generation) {
        done = true;
        clear(status).append(errorBox(e));
      }
    } finally {
      if (gen === generation) {
        loading = false;
        paint();
      }
    }
  };

  const rowEl = (d, i) => {
    const el = h('div', {
      class: `vrow${i === active ? ' active' : ''}`, role: 'row', 'aria-rowindex': i + 1,
      id: `row-${d.id}`, dataset: { id: d.id, index: i },
      onclick: () => { setActive(i); open(d.id); },
    },
    h('span', { class: 'mono', role: 'gridcell', text: d.id }),
    h('span', { role: 'gridcell' }, badge(d.state)),
    h('span', { role: 'gridcell', text: d.tenant }),
    h('span', { role: 'gridcell', text: d.platform }),
    h('span', { class: 'mono ellipsis', role: 'gridcell', title: d.destination, text: d.destination }),
    h('span', { class: 'num', role: 'gridcell', text: num(d.attempts) }),
    h('span', { class: 'ellipsis', role: 'gridcell', title: d.reason || '', text: d.reason || '' }),
    h('span', { class: 'small', role: 'gridcell', text: time(d.created_ms) }));
    el.style.transform = `translateY(${i * ROW_H}px)`;
    return el;
  };

  const paint = () => {
    spacer.style.height = `${rows.length * ROW_H}px`;
    scroller.setAttribute('aria-rowcount', rows.length);
    const top = scroller.scrollTop;
    const first = Math.max(0, Math.floor(top / ROW_H) - 10);
    const last = Math.min(rows.length, Math.ceil((top + scroller.clientHeight) / ROW_H) + 10);
    for (const el of [...scroller.querySelectorAll('.vrow')]) {
      el.remove();
    }
    for (let i = first; i < last; ++i) {
      scroller.append(rowEl(rows[i], i));
    }
    count.textContent = `${num(rows.length)}${done ? '' : '+'} loaded${rows.length >= MAX_ROWS ? ' (narrow the filter to see more)' : ''}`;
    if (rows.length === 0 && done) {
      scroller.append(h('div', { class: 'vrow empty muted', text: 'No delivery matches.' }));
    }
    if (!done && last > rows.length - 200) {
      fetchMore();
    }
  };

  const reset = () => {
    generation += 1;
    rows.length = 0;
    cursor = null;
    done = false;
    loading = false;
    active = -1;
    scroller.scrollTop = 0;
    paint();
  };

  const setActive = (i) => {
    active = Math.max(0, Math.min(rows.length - 1, i));
    const y = active * ROW_H;
    if (y < scroller.scrollTop) {
      scroller.scrollTop = y;
    } else if (y + ROW_H > scroller.scrollTop + scroller.clientHeight) {
      scroller.scrollTop = y + ROW_H - scroller.clientHeight;
    }
    paint();
    const el = document.getElementById(`row-${rows[active].id}`);
    if (el) {
      scroller.setAttribute('aria-activedescendant', el.id);
    }
  };

  scroller.addEventListener('scroll', () => requestAnimationFrame(paint));
  scroller.addEventListener('keydown', (ev) => {
    const page = Math.max(1, Math.floor(scroller.clientHeight / ROW_H) - 1);
    const moves = { ArrowDown: 1, ArrowUp: -1, PageDown: page, PageUp: -page };
    if (ev.key in moves && rows.length) {
      ev.preventDefault();
      setActive((active < 0 ? -1 : active) + moves[ev.key]);
    } else if (ev.key === 'Home' && rows.length) {
      ev.preventDefault();
      setActive(0);
    } else if (ev.key === 'End' && rows.length) {
      ev.preventDefault();
      setActive(rows.length - 1);
    } else if (ev.key === 'Enter' && active >= 0) {
      ev.preventDefault();
      open(rows[active].id);
    }
  });

  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const data = new FormData(form);
    for (const f of FIELDS) {
      filters[f] = String(data.get(f) || '').trim();
    }
    const shown = {};
    for (const f of FIELDS) {
      if (filters[f]) {
        shown[f] = f === 'since' || f === 'until' ? toApiTime(filters[f]) : filters[f];
      }
    }
    history.replaceState(null, '', `#/deliveries${query(shown)}`);
    bulk.hidden = true;
    reset();
  });

  // --- the drawer -------------------------------------------------------------------------
  let opener = null;
  let shownId = null;

  const closeDrawer = () => {
    drawer.hidden = true;
    shownId = null;
    if (opener) {
      opener.focus();
    }
  };
  drawer.addEventListener('keydown', (ev) => {
    if (ev.key === 'Escape') {
      closeDrawer();
    }
  });

  const attemptsTable = (list) => {
    if (!list || list.length === 0) {
      return h('p', { class: 'muted', text: 'No attempt yet.' });
    }
    return h('table', { class: 'table compact', id: 'attempts' },
      h('thead', {}, h('tr', {}, ['Time', 'HTTP', 'Platform error', 'Took', 'Rate-limit headers'].map((t) => h('th', { text: t })))),
      h('tbody', {}, list.map((a) => h('tr', {},
        h('td', { class: 'small', text: time(a.at_ms) }),
        h('td', { class: 'num', text: a.http_status || '–' }),
        h('td', {}, a.platform_error || '', a.detail ? h('div', { class: 'muted small', text: a.detail }) : null),
        h('td', { class: 'num', text: `${num(a.duration_ms)} ms` }),
        h('td', { class: 'mono small' }, Object.keys(a.rate_limit_headers || {}).length === 0
          ? h('span', { class: 'muted', text: 'none' })
          : Object.entries(a.rate_limit_headers).map(([k, v]) => h('div', { text: `${k}: ${v}` })))))));
  };

  const fact = (k, v) => [h('dt', { text: k }), h('dd', {}, v)];

  const renderDrawer = (d, note) => {
    const canReplay = d.state === 'dead' || d.state === 'deferred';
    const canCancel = d.state === 'queued' || d.state === 'deferred';
    clear(drawer).append(
      h('div', { class: 'drawer-head' },
        h('h2', { id: 'drawer-title' }, 'Delivery ', h('span', { class: 'mono', text: d.id })),
        h('button', { type: 'button', class: 'ghost', id: 'drawer-close', 'aria-label': 'Close', onclick: closeDrawer }, '✕')),
      h('div', { class: 'drawer-body' },
        h('div', { class: 'drawer-state', id: 'drawer-state' }, badge(d.state), note ? h('span', { class: 'muted small', text: note }) : null),
        h('div', { class: 'actions' },
          h('button', { type: 'button', id: 'drawer-replay', class: 'primary', disabled: !canReplay, onclick: () => act('replay', d) }, 'Replay'),
          h('button', { type: 'button', id: 'drawer-cancel', class: 'danger', disabled: !canCancel, onclick: () => act('cancel', d) }, 'Cancel')),
        h('dl', { class: 'facts' },
          fact('Tenant', d.tenant), fact('Platform', d.platform),
          fact('Destination', h('span', { class: 'mono wrap', text: d.destination })),
          fact('Credential', d.credential), fact('Attempts', num(d.attempts)),
          fact('Reason', d.reason || '–'), fact('Created', time(d.created_ms)),
          fact('Updated', time(d.updated_ms)),
          d.next_attempt_ms ? fact('Next attempt', time(d.next_attempt_ms)) : null,
          d.idempotency_key ? fact('Idempotency key', d.idempotency_key) : null,
          d.ordering_key ? fact('Ordering key', d.ordering_key) : null),
        h('h3', { text: 'Attempts' }), attemptsTable(d.attempts_history),
        h('h3', { text: 'Payload' }),
        h('pre', { class: 'payload', text: typeof d.payload === 'string' ? d.payload : JSON.stringify(d.payload, null, 2) })));
  };

  const open = async (id) => {
    opener = document.activeElement instanceof HTMLElement ? document.activeElement : scroller;
    shownId = id;
    drawer.hidden = false;
    clear(drawer).append(h('p', { class: 'pad muted', text: 'Loading…' }));
    try {
      const d = await api('GET', `/v1/deliveries/${encodeURIComponent(id)}`);
      if (shownId === id) {
        renderDrawer(d);
        document.getElementById('drawer-close').focus();
      }
    } catch (e) {
      clear(drawer).append(errorBox(e));
    }
  };

  // After a replay the drawer follows the delivery until it is delivered or dead again.
  const follow = async (id, tries) => {
    if (shownId !== id) {
      return;
    }
    try {
      const d = await api('GET', `/v1/deliveries/${encodeURIComponent(id)}`);
      if (shownId !== id) {
        return;
      }
      const settled = d.state === 'delivered' || d.state === 'dead' || d.state === 'cancelled';
      renderDrawer(d, settled ? '' : 'following…');
      const i = rows.findIndex((r) => r.id === id);
      if (i >= 0) {
        rows[i] = d;
        paint();
      }
      if (!settled && tries > 0) {
        later(() => follow(id, tries - 1), 1000);
      }
    } catch (e) {
      toast(e.message, 'bad');
    }
  };

  const act = async (what, d) => {
    try {
      if (what === 'replay') {
        await api('POST', `/v1/deliveries/${encodeURIComponent(d.id)}/replay`);
        toast(`Replayed ${d.id}`, 'ok');
      } else {
        await api('DELETE', `/v1/deliveries/${encodeURIComponent(d.id)}`);
        toast(`Cancelled ${d.id}`, 'ok');
      }
      follow(d.id, 120);
    } catch (e) {
      toast(`${what} failed: ${e.message}`, 'bad');
    }
  };

  // --- replay matching --------------------------------------------------------------------
  const replayFilter = () => {
    const body = { state: filters.state };
    for (const f of ['tenant', 'platform', 'destination', 'reason']) {
      if (filters[f]) {
        body[f] = filters[f];
      }
    }
    return body;
  };

  const followJob = async (job, total, bar, text) => {
    try {
      const j = await api('GET', `/v1/jobs/${job}`);
      const max = Math.max(total, j.matched, 1);
      bar.value = j.replayed;
      bar.max = max;
      text.textContent = `${j.state}: ${num(j.replayed)} replayed of ${num(j.matched)} looked at (${num(total)} matched the dry run)` +
        (j.error ? ` — ${j.error}` : '');
      if (j.state === 'running') {
        later(() => followJob(job, total, bar, text), 1000);
      } else {
        toast(`Replay job ${j.state}: ${num(j.replayed)} replayed`, j.state === 'done' ? 'ok' : 'bad');
        reset();
      }
    } catch (e) {
      text.textContent = e.message;
    }
  };

  document.getElementById('bulk-replay').addEventListener('click', async () => {
    bulk.hidden = false;
    clear(bulk);
    if (filters.state !== 'dead' && filters.state !== 'deferred') {
      bulk.append(h('p', { text: 'Replay matching needs the state filter dead or deferred (apply it first).' }));
      return;
    }
    if (filters.since || filters.until) {
      bulk.append(h('p', { text: 'Replay matching takes state, tenant, platform, destination and reason; clear the time bounds first.' }));
      return;
    }
    try {
      const dry = await api('POST', '/v1/deliveries/replay', Object.assign(replayFilter(), { dry_run: true }));
      const bar = h('progress', { id: 'job-progress', max: Math.max(1, dry.matched), value: 0 });
      const text = h('span', { class: 'small', id: 'job-text' });
      const go = h('button', { type: 'button', class: 'primary', id: 'bulk-confirm', disabled: dry.matched === 0 },
        `Replay ${num(dry.matched)}, paced`);
      bulk.append(h('p', {}, h('strong', { id: 'dry-count', text: num(dry.matched) }),
        ` ${filters.state} deliveries match this filter${dry.matched >= 100000 ? ' (the dry run counts at most 100,000)' : ''}. `,
        'They go through the same pacing as new work.'),
      h('div', { class: 'actions' }, go, h('button', { type: 'button', onclick: () => { bulk.hidden = true; } }, 'Close')));
      go.addEventListener('click', async () => {
        go.disabled = true;
        try {
          const job = await api('POST', '/v1/deliveries/replay', replayFilter());
          bulk.append(h('div', { class: 'job' }, bar, text));
          followJob(job.job, dry.matched, bar, text);
        } catch (e) {
          bulk.append(errorBox(e));
        }
      });
      go.focus();
    } catch (e) {
      bulk.append(errorBox(e));
    }
  });

  paint();
  fetchMore();
  const onResize = () => paint();
  window.addEventListener('resize', onResize);
  return () => {
    stopped = true;
    generation += 1;
    for (const t of timers) {
      clearTimeout(t);
    }
    window.removeEventListener('resize', onResize);
  };
}
