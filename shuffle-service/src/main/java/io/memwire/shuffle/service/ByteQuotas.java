package io.memwire.shuffle.service;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import io.memwire.transfer.memory.LimitExceededException;
import io.memwire.transfer.memory.MemoryAllocator;
import java.nio.file.attribute.UserPrincipal;
import java.util.HashMap;
import java.util.Map;

/**
 * The service's byte quotas as nodes of its transfer node's allocator tree, so that every byte it
 * registers is on one ledger: under the node's root (the registration budget), {@value #ALLOCATOR}
 * has one node per local user (limit {@code maxBytesPerUser}) and under it one per application
 * (limit {@code maxBytesPerApplication}). An application's output files are units of its node and
 * its executors' directories are children of it, so one reservation checks the application, its
 * user and the budget, all or nothing, and a refusal names the node whose limit refused.
 */
final class ByteQuotas implements AutoCloseable {
  /** The service's child of the node's root. */
  static final String ALLOCATOR = "service-outputs";

  private final MemoryAllocator outputs;
  private final long perUser;
  private final long perApplication;

  /** A user's node and how many applications of it are open. */
  private static final class UserNode {
    final MemoryAllocator memory;
    int applications;

    UserNode(MemoryAllocator memory) {
      this.memory = memory;
    }
  }

  @GuardedBy("this")
  private final Map<UserPrincipal, UserNode> users = new HashMap<>();

  ByteQuotas(MemoryAllocator root, long perUser, long perApplication) {
    this.outputs = root.newChild(ALLOCATOR);
    this.perUser = perUser;
    this.perApplication = perApplication;
  }

  /**
   * The node of a new application of {@code key}'s user, closed by {@link #close(Application.Key,
   * MemoryAllocator)}.
   */
  synchronized MemoryAllocator open(Application.Key key) {
    UserNode u =
        users.computeIfAbsent(
            key.user(), k -> new UserNode(outputs.newChild("user " + k.getName(), perUser)));
    u.applications++;
    return u.memory.newChild(key.id(), perApplication);
  }

  /**
   * Closes an application's node (its regions and directories already closed: a unit left is
   * reported as a leak) and its user's once no application of the user is left.
   */
  synchronized void close(Application.Key key, MemoryAllocator application) {
    application.close();
    UserNode u = users.get(key.user());
    if (u != null && --u.applications == 0) {
      users.remove(key.user());
      u.memory.close();
    }
  }

  /**
   * The setting whose limit refused {@code e}: {@code maxBytesPerUser} or {@code
   * maxBytesPerApplication}; null when it was not a quota of this tree (the registration budget).
   */
  String quotaKey(LimitExceededException e) {
    MemoryAllocator a = e.allocator();
    if (a.parent() == outputs) {
      return "maxBytesPerUser";
    }
    if (a.parent() != null && a.parent().parent() == outputs) {
      return "maxBytesPerApplication";
    }
    return null;
  }

  /** Closes the tree's root node; applications are closed first. */
  @Override
  public void close() {
    outputs.close();
  }
}
