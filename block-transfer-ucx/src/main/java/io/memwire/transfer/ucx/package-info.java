/**
 * The ucx provider: one-sided GETs through UCX (JUCX). A node's UCX context and worker live on one
 * progress thread ({@link io.memwire.transfer.ucx.UcxProgressThread}); remote keys travel, after an
 * HMAC handshake, over a small TCP control connection on the node's port ({@link
 * io.memwire.transfer.ucx.UcxControl}).
 */
package io.memwire.transfer.ucx;
