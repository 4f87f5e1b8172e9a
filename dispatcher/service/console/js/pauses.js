// Pauses (admin token): the operator's pauses in force (GET /api/admin/pauses, in creation
// order), each with Resume (DELETE /api/admin/pauses/{id}), and a form to pause by tenant,
// platform, credential and destination (an empty field matches any) with a reason (POST
// /api/admin/pauses); a field the service refuses is shown next to it with its message.
// #/pauses?id=pause_... marks that pause: the destinations page links a paused destination
// to it.

import { api } from './api.js';
import { clear, errorBox, h, num, time, toast } from './dom.js';

const REFRESH_MS = 5000;
const SCOPE = ['tenant', 'platform', 'credential', 'destination'];

// "tenant acme, platform webhook": what a pause holds.
function scopeText(p) {
  return SCOPE.filter((k) => p[k]).map((k) => `${k} ${p[k]}`).join(', ') || 'everything';
}

export function mount(root, session, params) {
  const summary = h('span', { class: 'muted small', id: 'pause-summary' });
  root.append(h('div', { class: 'page-head' }, h('h1', { text: 'Pauses' }), summary));
  if (!session.admin) {
    root.append(h('section', { class: 'card' },
      h('p', { class: 'muted', text: 'Pausing and resuming destinations needs the admin token. A destination an operator paused shows \u201cpaused\u201d on the Destinations page.' })));
    return () => {};
  }
  // target: the pause marked (from the address, or the one just made), scrolled to once.
  const state = { list: [], loaded: false, error: null, target: params.get('id') || '', scrolled: false, shown: '' };

  // The form: one field per scope, the platform a select, and the reason.
  const inputs = {};
  const errors = {};
  const field = (name, label, control) => {
    inputs[name] = control;
    errors[name] = h('span', { class: 'field-error', id: `err-pause-${name}`, role: 'alert' });
    control.setAttribute('aria-describedby', errors[name].id);
    return h('div', { class: `field${name === 'reason' ? ' wide' : ''}` },
      h('label', { for: control.id, text: label }), control, errors[name]);
  };
  const text = (name, placeholder) => h('input', { type: 'text', id: `pause-${name}`, name,
    autocomplete: 'off', spellcheck: 'false', placeholder });
  const submit = h('button', { type: 'submit', class: 'primary', id: 'pause-submit', text: 'Pause' });
  const general = h('div', { id: 'pause-error' });
  const form = h('form', { class: 'form-grid', id: 'pause-form', novalidate: true },
    field('tenant', 'Tenant', text('tenant', 'any tenant')),
    field('platform', 'Platform', h('select', { id: 'pause-platform', name: 'platform' },
      ['', ...session.platforms].map((p) => h('option', { value: p, text: p || 'any platform' })))),
    field('credential', 'Credential', text('credential', 'any credential')),
    field('destination', 'Destination', text('destination', 'any destination')),
    field('reason', 'Reason', text('reason', 'why, for the other operators')),
    h('div', { class: 'field actions' }, submit,
      h('span', { class: 'muted small', text: 'Matching destinations keep their deliveries and send nothing new until resumed; deliveries in flight finish.' })));

  const listTitle = h('h2', { tabindex: -1, text: 'In force' });
  const status = h('div', {});
  const body = h('tbody', {});
  root.append(
    h('section', { class: 'card' }, h('h2', { text: 'Pause' }), form, general),
    h('section', { class: 'card' }, listTitle, status,
      h('div', { class: 'table-wrap' }, h('table', { class: 'table', id: 'pauses' },
        h('thead', {}, h('tr', {}, ['Tenant', 'Platform', 'Credential', 'Destination', 'Reason', 'Created', 'ID', 'Action'].map(
          (t) => h('th', { scope: 'col', text: t })))),
        body))));

  const scopeCell = (p, k) => (p[k] ? h('td', { class: k === 'destination' ? 'mono wrap' : '', text: p[k] })
    : h('td', {}, h('span', { class: 'muted', text: 'any' })));

  const render = () => {
    clear(status);
    if (state.error) {
      status.append(errorBox(state.error));
    }
    if (state.target && state.loaded && !state.error && !state.list.some((p) => p.id === state.target)) {
      status.append(h('p', { class: 'muted small', id: 'pause-gone', text: `${state.target} is not in force (resumed).` }));
    }
    summary.textContent = state.loaded && !state.error ? `${num(state.list.length)} in force` : '';
    // Redrawn only when the list (or the marked pause) changed: a refresh keeps the focus.
    const shown = JSON.stringify([state.list, state.target, state.loaded]);
    if (shown === state.shown) {
      return;
    }
    state.shown = shown;
    const hadFocus = body.contains(document.activeElement);
    clear(body);
    for (const p of state.list) {
      body.append(h('tr', { id: `row-${p.id}`, dataset: { id: p.id }, class: p.id === state.target ? 'row-target' : '' },
        SCOPE.map((k) => scopeCell(p, k)),
        h('td', { class: 'wrap', text: p.reason || '' }),
        h('td', { class: 'small', title: p.created || '', text: time(p.created_ms) }),
        h('td', { class: 'mono small', text: p.id }),
        h('td', {}, h('button', {
          type: 'button', class: 'small-btn', id: `resume-${p.id}`,
          'aria-label': `Resume ${scopeText(p)}`, onclick: (ev) => resume(p, ev.currentTarget),
        }, 'Resume'))));
    }
    if (state.loaded && state.list.length === 0) {
      body.append(h('tr', {}, h('td', { colspan: 8, class: 'muted empty', text: 'No pause in force.' })));
    }
    if (hadFocus && !body.contains(document.activeElement)) {
      listTitle.focus();  // its row went (resumed): focus stays in the list, not on the page
    }
    const marked = state.target && document.getElementById(`row-${state.target}`);
    if (marked && !state.scrolled) {
      state.scrolled = true;
      marked.scrollIntoView({ block: 'center' });
    }
  };

  let stopped = false;
  let sequence = 0;  // a load answered after a later one started is dropped
  const load = async () => {
    const mine = ++sequence;
    try {
      const answer = await api('GET', '/api/admin/pauses');
      if (mine !== sequence) {
        return;
      }
      state.list = answer.pauses || [];
      state.error = null;
    } catch (e) {
      if (mine !== sequence) {
        return;
      }
      state.error = e;
    }
    state.loaded = true;
    if (!stopped) {
      render();
    }
  };

  const resume = async (p, button) => {
    const focused = document.activeElement === button;  // a disabled button loses the focus
    button.disabled = true;
    try {
      await api('DELETE', `/api/admin/pauses/${encodeURIComponent(p.id)}`);
      toast(`Resumed ${scopeText(p)}`, 'ok');
    } catch (e) {
      if (e.status === 404) {
        toast(`Already resumed: ${scopeText(p)}`);
      } else {
        toast(`Resume failed: ${e.message}`, 'bad');
        button.disabled = false;
      }
    }
    await load();
    if (focused && !stopped) {
      (button.isConnected && !button.disabled ? button : listTitle).focus();
    }
  };

  const clearErrors = () => {
    clear(general);
    for (const [name, el] of Object.entries(errors)) {
      clear(el);
      inputs[name].removeAttribute('aria-invalid');
    }
  };

  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    clearErrors();
    // Only what was filled in: an absent field matches any (the service says when none is).
    const request = {};
    for (const name of [...SCOPE, 'reason']) {
      const value = inputs[name].value.trim();
      if (value) {
        request[name] = value;
      }
    }
    submit.disabled = true;
    try {
      const p = await api('POST', '/api/admin/pauses', request);
      // 200 (one with this scope was in force already) and 201 both answer the pause.
      const known = state.list.some((x) => x.id === p.id);
      toast(known ? `Already paused: ${scopeText(p)}` : `Paused ${scopeText(p)}`, 'ok');
      form.reset();
      state.target = p.id;
      state.scrolled = false;
      load();
    } catch (e) {
      const name = e.status === 400 && errors[e.body.field] ? e.body.field : null;
      if (name) {
        errors[name].textContent = e.message;
        inputs[name].setAttribute('aria-invalid', 'true');
        inputs[name].focus();
      } else {
        general.append(errorBox(e));
      }
    } finally {
      submit.disabled = false;
    }
  });

  render();
  load();
  const refresh = setInterval(load, REFRESH_MS);
  return () => {
    stopped = true;
    clearInterval(refresh);
  };
}
