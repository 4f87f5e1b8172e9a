// Entry point: sign-in, the hash router (#/overview, #/destinations, #/deliveries,
// #/budgets, #/pauses) and the stats sampler that feeds the overview's chart.

import { api, ApiError, platformsOf, setToken, token } from './api.js';
import { clear, h, errorBox } from './dom.js';
import * as overview from './overview.js';
import * as destinations from './destinations.js';
import * as deliveries from './deliveries.js';
import * as budgets from './budgets.js';
import * as pauses from './pauses.js';

const pages = { overview, destinations, deliveries, budgets, pauses };
const main = document.getElementById('main');
// Who the token is: {admin: bool, tenant: string|null}, and the platforms the service reports
// (read once at sign-in: the pages' platform choices).
const session = { admin: false, tenant: null, platforms: [] };
let unmount = null;

function signInForm(problem) {
  const input = h('input', {
    id: 'token', type: 'password', autocomplete: 'off', spellcheck: 'false', required: true,
    placeholder: 'tenant API key or admin token', 'aria-describedby': 'token-help',
  });
  const form = h('form', { class: 'card signin', id: 'signin' },
    h('h1', { text: 'Sign in' }),
    h('label', { for: 'token', text: 'API key or admin token' }),
    input,
    h('p', { id: 'token-help', class: 'muted small' },
      'Kept in this tab only (sessionStorage). A tenant key shows that tenant\u2019s work; the ',
      'admin token shows every tenant, the budgets and the pauses.'),
    problem ? errorBox(problem) : null,
    h('button', { type: 'submit', class: 'primary', text: 'Sign in' }));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    setToken(input.value.trim());
    await start();
  });
  return form;
}

function showSignIn(problem) {
  stopPage();
  document.getElementById('nav').hidden = true;
  document.getElementById('signout').hidden = true;
  document.getElementById('who').textContent = '';
  clear(main).append(signInForm(problem));
  document.getElementById('token').focus();
}

function stopPage() {
  if (unmount) {
    unmount();
    unmount = null;
  }
}

function route() {
  if (!token()) {
    return;
  }
  const [name, qs] = location.hash.replace(/^#\/?/, '').split('?');
  const page = pages[name] ? name : 'overview';
  for (const a of document.querySelectorAll('#nav a')) {
    if (a.dataset.page === page) {
      a.setAttribute('aria-current', 'page');
    } else {
      a.removeAttribute('aria-current');
    }
  }
  stopPage();
  clear(main);
  document.title = `${page[0].toUpperCase()}${page.slice(1)} · relay-egress`;
  unmount = pages[page].mount(main, session, new URLSearchParams(qs || ''));
}

async function start() {
  if (!token()) {
    showSignIn();
    return;
  }
  try {
    const stats = await api('GET', '/v1/stats');
    session.tenant = typeof stats.tenant === 'string' ? stats.tenant : null;
    session.admin = session.tenant === null;
    session.platforms = platformsOf(stats);
  } catch (e) {
    setToken('');
    showSignIn(e instanceof ApiError && e.status === 401
      ? new ApiError(401, { error: 'unauthorized', message: 'unknown API key or token' }) : e);
    return;
  }
  document.getElementById('nav').hidden = false;
  document.getElementById('signout').hidden = false;
  document.getElementById('who').textContent =
    session.admin ? 'admin: every tenant' : `tenant: ${session.tenant}`;
  overview.startSampler(session);
  route();
}

document.getElementById('signout').addEventListener('click', () => {
  setToken('');
  overview.stopSampler();
  location.hash = '#/overview';
  showSignIn();
});
window.addEventListener('hashchange', route);
start();
