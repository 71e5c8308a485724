/**
 * The provider interface: what tcp and verbs implement underneath {@link
 * io.memwire.transfer.TransferNode}. Applications do not use this package.
 */
package io.memwire.transfer.spi;
