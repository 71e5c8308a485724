/**
 * Block-transfer's own helpers, shared by its packages (the API and the providers). Not API: no
 * other module may use them, and they may change without notice.
 */
package io.memwire.transfer.internal;
