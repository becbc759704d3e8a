"""One evaluation pass and what feeds it: the inputs (release-layout directories, prediction folders), the
ground-truth cache, the pass over videos, the slice/dataset/directory entry points and the results documents."""
