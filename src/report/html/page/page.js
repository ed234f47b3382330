// Selecting an expectation marks the time it judged; `#expect-N` in the
// address selects one when the page opens. Segment names that do not fit
// their segment are hidden (and shown again when the page is wider).
(function () {
  'use strict';
  var axis = Number(document.body.getAttribute('data-axis-ms'));
  var layer = document.getElementById('judged');
  var items = document.querySelectorAll('.verdicts li');

  function select(li) {
    items.forEach(function (other) { other.classList.remove('selected'); });
    li.classList.add('selected');
    layer.textContent = '';
    JSON.parse(li.getAttribute('data-judged')).forEach(function (span) {
      var mark = document.createElement('div');
      mark.className = 'span';
      mark.style.left = (span[0] / axis * 100) + '%';
      mark.style.width = ((span[1] - span[0]) / axis * 100) + '%';
      layer.appendChild(mark);
    });
  }

  items.forEach(function (li) {
    li.addEventListener('click', function () { select(li); });
    li.addEventListener('keydown', function (e) {
      if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); select(li); }
    });
  });
  var wanted = /^#expect-(\d+)$/.exec(window.location.hash);
  if (wanted) {
    var li = document.getElementById('expect-' + wanted[1]);
    if (li) { select(li); }
  }

  function fit() {
    document.querySelectorAll('text.seg').forEach(function (text) {
      var rect = text.previousElementSibling;
      text.style.display = '';
      var room = rect.getBoundingClientRect().width;
      var need = text.getComputedTextLength() + 8;
      var track = text.ownerSVGElement.getBoundingClientRect();
      var end = rect.getBoundingClientRect().left + need;
      if (need > room || end > track.right) { text.style.display = 'none'; }
    });
  }
  fit();
  window.addEventListener('resize', fit);
})();
