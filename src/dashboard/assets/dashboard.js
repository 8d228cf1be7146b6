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
