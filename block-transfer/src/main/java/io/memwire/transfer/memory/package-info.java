/**
 * One ownership model for the registered memory a node and its users hand out. A {@link
 * io.memwire.transfer.memory.MemoryAllocator} root is owned by the {@code TransferNode}; each
 * consumer (read pool, shuffle directory, Flight arenas, Flight lease guards) takes a named child
 * and keeps its own placement strategy (size classes, best-fit arenas, guard pages, directory
 * chunks), but every piece it hands out is a reference-counted {@link
 * io.memwire.transfer.memory.MemoryUnit}: freed by the strategy when its count reaches zero,
 * accounted per child and root, listed by {@code toVerboseString()} and reported as a leak when its
 * allocator closes while it is still live.
 */
package io.memwire.transfer.memory;
