/**
 * Direct memory for Flight bodies: large arenas taken from a transfer node's allocator, handed out
 * in blocks, and an Arrow allocation manager over them. A reader's arenas are registered as a whole
 * (landing memory); a server's are not, and each lease registers only its own bytes.
 */
package io.memwire.flight.memory;
