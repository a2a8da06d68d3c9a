"""Controller-side reads over HTTP and of files, without pyinfra: downloads, apt repositories
and keys, wheel indexes and locks, bundles, the matrix check, and pull mode's signed state."""
