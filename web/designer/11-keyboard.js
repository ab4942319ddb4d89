// ---------------------------------------------------------------------------------------------
// Keyboard
// ---------------------------------------------------------------------------------------------
document.addEventListener('keydown', (e) => {
  const t = e.target;
  const typing = t instanceof Element && !!t.closest('input, textarea, select, [contenteditable="true"]');
  if (document.querySelector('dialog[open]')) return;
  if (e.key === 'Escape') {
    if (connecting) connecting();
    if (document.body.classList.contains('full')) setFull(false);
    if (!typing) select(null); else t.blur();
    return;
  }
  const mod = e.ctrlKey || e.metaKey;
  const key = e.key.toLowerCase();
  if (mod && key === 'k') { e.preventDefault(); openFind(); return; }
  if (mod && key === 's') { e.preventDefault(); if (!READ_ONLY) { closeNoteEditor(true); save(); } return; }
  if (typing) return;
  if (mod && key === 'z') { e.preventDefault(); if (e.shiftKey) redo(); else undo(); return; }
  if (mod && key === 'y') { e.preventDefault(); redo(); return; }
  if (mod && key === 'a') { e.preventDefault(); selectAll(); return; }
  if (mod && key === 'd') { e.preventDefault(); duplicateSelection(); return; }
  if (mod) return; // Ctrl+C / Ctrl+V: the copy and paste events
  if (e.key === '/') { e.preventDefault(); openFind(); return; }
  if (e.key === '?') { e.preventDefault(); $('dlg-keys').showModal(); return; }
  if (e.key === 'Delete' || e.key === 'Backspace') { if (sel) { e.preventDefault(); deleteSelection(); } return; }
  const onCanvas = t === canvasEl || t === document.body;
  if (e.key === 'Tab' && t === canvasEl) { e.preventDefault(); cycle(e.shiftKey ? -1 : 1); return; }
  if (onCanvas && e.key.startsWith('Arrow')) {
    e.preventDefault();
    if (e.shiftKey && selectedNodes().length && !READ_ONLY) {
      const d = 10;
      const dx = e.key === 'ArrowLeft' ? -d : e.key === 'ArrowRight' ? d : 0;
      const dy = e.key === 'ArrowUp' ? -d : e.key === 'ArrowDown' ? d : 0;
      moveSelection(dx, dy, 'move:' + selectedNodes().join(','));
      return;
    }
    cycle(e.key === 'ArrowRight' || e.key === 'ArrowDown' ? 1 : -1);
  }
});

