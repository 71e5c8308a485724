package io.memwire.flight;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.EnumSet;
import org.junit.jupiter.api.Test;

/** The moves the server session and the client stream allow, and the error naming a bad one. */
class StateMachineTest {

  @Test
  void sessionMovesOnlyForward() {
    assertEquals(
        EnumSet.of(SessionState.DRAINING, SessionState.ENDED, SessionState.CANCELLED),
        SessionState.STREAMING.next());
    assertEquals(
        EnumSet.of(SessionState.ENDED, SessionState.CANCELLED), SessionState.DRAINING.next());
    assertTrue(SessionState.ENDED.next().isEmpty());
    assertTrue(SessionState.CANCELLED.next().isEmpty());
    assertEquals(SessionState.DRAINING, SessionState.STREAMING.moveTo(SessionState.DRAINING));
    IllegalStateException e =
        assertThrows(
            IllegalStateException.class,
            () -> SessionState.DRAINING.moveTo(SessionState.STREAMING));
    assertEquals("RDMA exchange cannot move from DRAINING to STREAMING", e.getMessage());
    e =
        assertThrows(
            IllegalStateException.class, () -> SessionState.ENDED.moveTo(SessionState.CANCELLED));
    assertEquals("RDMA exchange cannot move from ENDED to CANCELLED", e.getMessage());
  }

  @Test
  void streamEndsOrFailsOnceThenCloses() {
    assertEquals(RdmaSource.State.ENDED, RdmaSource.State.OPEN.moveTo(RdmaSource.State.ENDED));
    assertEquals(RdmaSource.State.FAILED, RdmaSource.State.OPEN.moveTo(RdmaSource.State.FAILED));
    for (RdmaSource.State s :
        EnumSet.of(RdmaSource.State.OPEN, RdmaSource.State.ENDED, RdmaSource.State.FAILED)) {
      assertEquals(RdmaSource.State.CLOSED, s.moveTo(RdmaSource.State.CLOSED));
    }
    IllegalStateException e =
        assertThrows(
            IllegalStateException.class,
            () -> RdmaSource.State.ENDED.moveTo(RdmaSource.State.FAILED));
    assertEquals("RDMA stream cannot move from ENDED to FAILED", e.getMessage());
    e =
        assertThrows(
            IllegalStateException.class,
            () -> RdmaSource.State.CLOSED.moveTo(RdmaSource.State.CLOSED));
    assertEquals("RDMA stream cannot move from CLOSED to CLOSED", e.getMessage());
    assertThrows(
        IllegalStateException.class, () -> RdmaSource.State.FAILED.moveTo(RdmaSource.State.OPEN));
  }
}
