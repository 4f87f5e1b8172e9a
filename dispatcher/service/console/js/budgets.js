// Budgets: how much of each budget every tenant uses now (from GET /v1/destinations: the
// units its destinations have left of their budget), and, with the admin token, a tenant's
// effective budgets (GET /api/admin/tenants/{t}/rate_limits) with its overrides editable
// (PUT, the whole map); a value the service refuses is shown next to its field.

import { api } from './api.js';
import { clear, errorBox, fillBar, h, num, toast } from './dom.js';

const REFRESH_MS = 5000;

function utilization(list) {
  // tenant -> budget name -> {destinations, used, capacity, waiting, in_flight}
  const by = new Map();
  for (const d of list) {
    if (!by.has(d.tenant)) {
      by.set(d.tenant, new Map());
    }
    const t = by.get(d.tenant);
    const name = d.budget.name;
    if (!t.has(name)) {
      t.set(name, { destinations: 0, used: 0, capacity: 0, waiting: 0, in_flight: 0 });
    }
    const u = t.get(name);
    const cap = Math.max(1, d.budget.burst || d.budget.limit);
    u.destinations += 1;
    u.capacity += cap;
    u.used += Math.max(0, cap - d.remaining);
    u.waiting += d.deferral ? 1 : 0;
    u.in_flight += d.in_flight;
  }
  return by;
}

export function mount(root, session) {
  const usage = h('section', { class: 'card' });
  const editor = h('section', { class: 'card', id: 'overrides' });
  root.append(h('div', { class: 'page-head' }, h('h1', { text: 'Budgets' }),
    h('span', { class: 'muted small', text: 'utilization: units in use of each budget\u2019s burst, summed over the tenant\u2019s destinations with work' })),
  usage, editor);
  let tenants = session.admin ? [] : [session.tenant];
  let stopped = false;
  // Loads the first tenant seen into the editor, once, when none was typed.
  let loadFirst = null;

  const loadUsage = async () => {
    let list;
    let partial = false;
    try {
      // One page of the most (1,000), at a bounded cost to the service; beyond it the figures
      // are of those 1,000 (said below the table).
      const answer = await api('GET', '/v1/destinations?limit=1000');
      list = answer.destinations || [];
      partial = Boolean(answer.next_cursor);
    } catch (e) {
      clear(usage).append(errorBox(e));
      return;
    }
    if (stopped) {
      return;
    }
    const by = utilization(list);
    const rows = [];
    for (const [tenant, budgets] of [...by.entries()].sort()) {
      for (const [name, u] of [...budgets.entries()].sort()) {
        rows.push(h('tr', {},
          h('th', { scope: 'row', text: tenant }), h('td', { text: name }),
          h('td', { class: 'num', text: num(u.destinations) }),
          h('td', {}, fillBar(u.used, u.capacity, `${num(u.used)} of ${num(u.capacity)} in use`)),
          h('td', { class: 'num', text: num(u.waiting) }),
          h('td', { class: 'num', text: num(u.in_flight) })));
      }
    }
    clear(usage).append(h('h2', { text: 'Utilization by tenant' }),
      rows.length === 0 ? h('p', { class: 'muted', text: 'No destination with work.' })
        : h('div', { class: 'table-wrap' }, h('table', { class: 'table', id: 'utilization' },
          h('thead', {}, h('tr', {}, ['Tenant', 'Budget', 'Destinations', 'In use', 'Waiting', 'In flight'].map(
            (t, i) => h('th', { scope: 'col', class: i === 2 || i >= 4 ? 'num' : '', text: t })))),
          h('tbody', {}, rows))));
    if (partial) {
      usage.append(h('p', { class: 'muted small', id: 'utilization-partial',
        text: 'Of the first 1,000 destinations with work (one page of the service\u2019s list).' }));
    }
    if (session.admin) {
      const known = [...by.keys()].sort();
      if (tenants.length === 0 && known.length > 0 && loadFirst) {
        loadFirst(known[0]);
      }
      if (known.join() !== tenants.join()) {
        tenants = known;
        const list = document.getElementById('tenant-names');
        if (list) {
          clear(list).append(tenants.map((t) => h('option', { value: t })));
        }
      }
    }
  };

  const showEditor = () => {
    if (!session.admin) {
      editor.append(h('h2', { text: 'Overrides' }),
        h('p', { class: 'muted', text: 'Editing a tenant\u2019s budgets needs the admin token.' }));
      return;
    }
    const tenant = h('input', { id: 'budget-tenant', list: 'tenant-names', autocomplete: 'off', required: true, placeholder: 'tenant' });
    const form = h('form', { class: 'toolbar' },
      h('label', { for: 'budget-tenant', text: 'Tenant' }), tenant,
      h('datalist', { id: 'tenant-names' }, tenants.map((t) => h('option', { value: t }))),
      h('button', { type: 'submit', text: 'Load budgets' }));
    const table = h('div', {});
    editor.append(h('h2', { text: 'Overrides' }), form, table);
    form.addEventListener('submit', (ev) => {
      ev.preventDefault();
      load(tenant.value.trim(), table);
    });
    loadFirst = (name) => {
      loadFirst = null;
      if (!tenant.value) {
        tenant.value = name;
        load(name, table);
      }
    };
  };

  const load = async (tenant, box) => {
    if (!tenant) {
      return;
    }
    let answer;
    try {
      answer = await api('GET', `/api/admin/tenants/${encodeURIComponent(tenant)}/rate_limits`);
    } catch (e) {
      clear(box).append(errorBox(e));
      return;
    }
    const inputs = {};
    const errors = {};
    const rows = Object.entries(answer.rate_limits).map(([name, b]) => {
      const cb = h('input', { type: 'checkbox', id: `ov-${name}`, checked: b.overridden, 'aria-label': `override ${name}` });
      const field = (k) => h('input', { type: 'number', min: 1, step: 1, value: b[k], id: `${k}-${name}`,
        'aria-label': `${name} ${k}`, inputmode: 'numeric', class: 'num-input' });
      inputs[name] = { cb, limit: field('limit'), scale_ms: field('scale_ms'), burst: field('burst') };
      errors[name] = h('div', { class: 'field-error', id: `err-${name}`, role: 'alert' });
      const sync = () => {
        for (const k of ['limit', 'scale_ms', 'burst']) {
          inputs[name][k].disabled = !cb.checked;
        }
      };
      cb.addEventListener('change', sync);
      sync();
      // A shadow limit (metered, never enforced) is shown beside its budget and kept by a save.
      const sb = (answer.shadow || {})[name];
      const shadowNote = sb ? h('div', { class: 'muted small', text: `shadow: ${sb.limit} per ${sb.scale_ms} ms` }) : null;
      return h('tr', {},
        h('td', {}, cb), h('th', { scope: 'row' }, h('label', { for: `ov-${name}`, text: name }), shadowNote, errors[name]),
        h('td', {}, inputs[name].limit), h('td', {}, inputs[name].scale_ms), h('td', {}, inputs[name].burst));
    });
    const save = h('button', { type: 'submit', class: 'primary', id: 'save-overrides', text: 'Save overrides' });
    const general = h('div', {});
    const form = h('form', { novalidate: true },
      h('div', { class: 'table-wrap' }, h('table', { class: 'table', id: 'budget-table' },
        h('thead', {}, h('tr', {}, ['Override', 'Budget', 'Limit', 'Per (ms)', 'Burst'].map((t) => h('th', { scope: 'col', text: t })))),
        h('tbody', {}, rows))),
      general,
      h('div', { class: 'actions' }, save,
        h('span', { class: 'muted small', text: 'Unchecked budgets use the defaults; saving replaces the whole override map.' })));
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      clear(general);
      const body = {};
      let bad = false;
      for (const [name, f] of Object.entries(inputs)) {
        clear(errors[name]);
        if (!f.cb.checked) {
          continue;
        }
        const v = {};
        for (const k of ['scale_ms', 'limit', 'burst']) {
          const raw = f[k].value.trim();
          if (raw === '' && k === 'burst') {
            continue;
          }
          if (!/^[1-9][0-9]*$/.test(raw)) {
            errors[name].textContent = `${k}: a positive whole number`;
            f[k].setAttribute('aria-invalid', 'true');
            bad = true;
            continue;
          }
          f[k].removeAttribute('aria-invalid');
          v[k] = Number(raw);
        }
        body[name] = v;
      }
      if (bad) {
        return;
      }
      // The shadow limits stay as they are (a budget overridden here replaces its shadow one).
      for (const [name, sb] of Object.entries(answer.shadow || {})) {
        if (!(name in body)) {
          body[name] = { limit: sb.limit, scale_ms: sb.scale_ms, burst: sb.burst, mode: 'shadow' };
        }
      }
      try {
        await api('PUT', `/api/admin/tenants/${encodeURIComponent(tenant)}/rate_limits`, { rate_limits: body });
        toast(`Saved the overrides of ${tenant}`, 'ok');
        load(tenant, box);
      } catch (e) {
        const m = /^rate_limits\.([a-z_]+)/.exec(e.body.field || '');
        if (m && errors[m[1]]) {
          errors[m[1]].textContent = e.message;
        } else {
          general.append(errorBox(e));
        }
      }
    });
    clear(box).append(h('p', { class: 'small' }, 'Effective budgets of ', h('strong', { text: answer.tenant })), form);
  };

  showEditor();
  loadUsage();
  const refresh = setInterval(loadUsage, REFRESH_MS);
  return () => {
    stopped = true;
    clearInterval(refresh);
  };
}
