package io.memwire.transfer.verbs;

import com.ibm.disni.verbs.IbvWC;
import io.memwire.transfer.RemoteAccessException;
import io.memwire.transfer.TransferConnectionException;
import io.memwire.transfer.spi.WireRead;
import java.net.InetSocketAddress;

/**
 * What a work completion's status means for a {@link VerbsConnection}: success, a refusal by the
 * remote NIC (a {@link RemoteAccessException} for that read alone; the queue pair is
 * re-established) or an error that fails the connection, and the words its exception carries.
 *
 * <p>Threads: stateless; called on the completion thread.
 */
final class CompletionErrors {
  static final int SUCCESS = IbvWC.IbvWcStatus.IBV_WC_SUCCESS.ordinal();
  private static final int FLUSH = IbvWC.IbvWcStatus.IBV_WC_WR_FLUSH_ERR.ordinal();
  private static final int REMOTE_ACCESS = IbvWC.IbvWcStatus.IBV_WC_REM_ACCESS_ERR.ordinal();
  private static final int REMOTE_INVALID = IbvWC.IbvWcStatus.IBV_WC_REM_INV_REQ_ERR.ordinal();

  private CompletionErrors() {}

  /** Whether the remote NIC refused the read (its key or range), not the connection. */
  static boolean refused(int status) {
    return status == REMOTE_ACCESS || status == REMOTE_INVALID;
  }

  /** The error of a read the remote NIC refused ({@link #refused}). */
  static RemoteAccessException refusal(int status, WireRead hit, InetSocketAddress peer) {
    return new RemoteAccessException(
        status == REMOTE_ACCESS
            ? RemoteAccessException.Reason.ACCESS_ERROR
            : RemoteAccessException.Reason.INVALID_REQUEST,
        "the remote NIC refused the read with "
            + statusName(status)
            + " (the key is not a "
            + "live registration or the range lies outside it)",
        hit.source(),
        peer);
  }

  /** The error that fails the connection after any other failed completion. */
  static TransferConnectionException fatal(int status, InetSocketAddress peer) {
    return new TransferConnectionException(
        "RDMA read failed with "
            + statusName(status)
            + (status == FLUSH ? " (the queue pair was moved to the error state)" : "")
            + (status == IbvWC.IbvWcStatus.IBV_WC_RETRY_EXC_ERR.ordinal()
                ? " (the peer stopped answering: node down or network path broken)"
                : ""),
        peer,
        null);
  }

  static String statusName(int status) {
    IbvWC.IbvWcStatus[] all = IbvWC.IbvWcStatus.values();
    return status >= 0 && status < all.length ? all[status].name() : "status " + status;
  }
}
