"""Space helpers: batch buffers per space and shared memory laid out the same way."""
