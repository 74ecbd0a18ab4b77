"""The subprocess transport's shared layout: what the parent and its workers both read and write."""
