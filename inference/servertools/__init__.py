"""Server tools (`service:*` entries of `tools`) and the server-side tool loop that runs them."""
