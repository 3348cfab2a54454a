// The dashboard's sign-in page. A sign-in link carries the token in its fragment
// (`#token=...`), which a browser never sends to a server, so no request log, proxy or Referer
// holds it: this script takes it from the address bar, removes it from there (and from the
// history), and posts it with the form, as if typed. The session cookie comes back.
/* global document, location, history, URLSearchParams */
'use strict';
(() => {
  const form = document.getElementById('signin');
  if (!form) return;
  const hash = new URLSearchParams(location.hash.slice(1));
  const token = hash.get('token');
  if (token === null) return;
  history.replaceState(null, '', location.pathname + location.search);
  // The page to come back to: where the link pointed.
  form.elements.namedItem('next').value = location.pathname + location.search;
  form.elements.namedItem('token').value = token;
  // A wrong token gets the page again with the error, and is not tried twice.
  if (!form.dataset.failed) form.submit();
})();
