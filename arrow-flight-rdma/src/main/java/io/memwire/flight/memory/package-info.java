/**
 * Registered memory for Flight bodies: large arenas registered once with a transfer node, handed
 * out in blocks, and an Arrow allocation manager over them.
 */
package io.memwire.flight.memory;
