// Progressive enhancement only: every page works without this file.
// Copy buttons: shown only where the Clipboard API exists; they copy the text of the element they name.
document.addEventListener('DOMContentLoaded', () => {
  if (!navigator.clipboard) return;
  for (const button of document.querySelectorAll('button[data-copy]')) {
    button.hidden = false;
    button.addEventListener('click', async () => {
      const source = document.getElementById(button.dataset.copy);
      if (!source) return;
      try {
        await navigator.clipboard.writeText(source.textContent.trim());
        button.textContent = 'Copied';
      } catch {
        button.textContent = 'Select and copy';
      }
      setTimeout(() => (button.textContent = 'Copy'), 2000);
    });
  }
});

// Live parts of a form: an element with data-live-url shows what the fields it names
// (data-live-fields) give, as the server says it, and follows them as they are typed. Without
// script the form's own buttons show the same (a schedule's Preview, the settings' Save).
document.addEventListener('DOMContentLoaded', () => {
  for (const target of document.querySelectorAll('[data-live-url]')) {
    const form = target.closest('form');
    if (!form) continue;
    const names = target.dataset.liveFields.split(' ');
    let timer = null;
    let asked = 0;
    form.addEventListener('input', (event) => {
      if (!names.includes(event.target.name)) return;
      clearTimeout(timer);
      timer = setTimeout(async () => {
        const url = new URL(target.dataset.liveUrl, window.location.href);
        for (const name of names) {
          const field = form.elements.namedItem(name);
          if (field) url.searchParams.set(name, field.value);
        }
        const mine = ++asked;
        try {
          const response = await fetch(url, { headers: { accept: 'text/html' } });
          // Only the answer to the latest values is shown.
          if (response.ok && mine === asked) target.innerHTML = await response.text();
        } catch {
          // Offline: the form's own buttons still work.
        }
      }, 250);
    });
  }
});
