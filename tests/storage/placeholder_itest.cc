// Integration tests live in *_itest.cc files.
