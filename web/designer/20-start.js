// ---------------------------------------------------------------------------------------------
// Start
// ---------------------------------------------------------------------------------------------
document.body.classList.toggle('embed', EMBED);
document.body.classList.toggle('readonly', READ_ONLY);
document.body.classList.toggle('served', SERVED);
for (const b of document.querySelectorAll('.served-only')) b.hidden = !SERVED;
if (READ_ONLY) { for (const e of document.querySelectorAll('.edit-only')) e.hidden = true; $('design-name').readOnly = true; }
buildPalette();
fillDatalists();
setName('');
layout();
render();
renderPanel();
renderIssues();
updateDirty();
if (!SERVED) say('Opened from a file: import and export JSON; serve it with vwf serve to save and run');
if (RUN_ID) loadRun(true);
else if (VERSION) loadVersion();
else if (SERVED) {
  loadSchema();
  loadLists();
  const wanted = params.get('design');
  if (wanted) loadDesign(wanted);
}
